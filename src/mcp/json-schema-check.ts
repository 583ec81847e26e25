import type {
  JsonSchemaType,
  JsonSchemaValidator,
  jsonSchemaValidator,
} from "@modelcontextprotocol/sdk/validation/types.js";
import { z } from "zod";

/**
 * JSON Schema checks by zod (`z.fromJSONSchema`), which the relay carries already: the MCP SDK's
 * default (Ajv) compiles schemas to code with `new Function`, which Workers forbid. Each schema
 * is converted once per isolate. A failure reads as the relay's 400s do: `<field>: <problem>`.
 */
export class ZodJsonSchemaCheck implements jsonSchemaValidator {
  private readonly cache = new WeakMap<object, z.ZodType>();

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    let parser = this.cache.get(schema);
    if (!parser) {
      parser = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
      this.cache.set(schema, parser);
    }
    const checked = parser;
    return (input) => {
      const result = checked.safeParse(input);
      if (result.success) return { valid: true, data: result.data as T, errorMessage: undefined };
      return { valid: false, data: undefined, errorMessage: describeIssue(result.error) };
    };
  }
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid";
  if (issue.code === "unrecognized_keys") return `unknown argument ${issue.keys.join(", ")}`;
  const where = issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ` : "";
  if (issue.code === "invalid_type" && /received undefined$/.test(issue.message)) {
    return `${where}required`;
  }
  return `${where}${issue.message}`;
}
