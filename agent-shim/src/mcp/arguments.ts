import type { ObjectSchema } from "../../../src/mcp/tool-definitions.js";

/** A tool's arguments, once they match its input schema. */
export type ToolArguments = Record<string, unknown>;

/** The parts of JSON Schema the tool definitions use for an argument. */
interface ArgumentSchema {
  type?: string;
  minLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  items?: ArgumentSchema;
}

/**
 * Checks a tool call's `arguments` against the tool's input schema, as far as the definitions
 * use JSON Schema (types, required, no extra properties, minLength, pattern, minimum, maximum,
 * array items), and returns them, or a one-line problem for the model to correct. The Python
 * shim words each problem the same.
 */
export function checkArguments(
  tool: string,
  schema: ObjectSchema,
  args: unknown,
): { args: ToolArguments } | { problem: string } {
  if (args === undefined || args === null) args = {};
  if (typeof args !== "object" || Array.isArray(args)) {
    return { problem: `${tool} takes its arguments as an object` };
  }
  const given = args as ToolArguments;
  for (const name of Object.keys(given)) {
    if (!Object.hasOwn(schema.properties, name)) {
      const known = Object.keys(schema.properties);
      const takes = known.length === 0 ? "no arguments" : `only ${known.join(", ")}`;
      return { problem: `${tool} has no argument ${name}; it takes ${takes}` };
    }
  }
  for (const name of schema.required ?? []) {
    if (given[name] === undefined) return { problem: `${tool} needs ${name}` };
  }
  for (const [name, value] of Object.entries(given)) {
    const problem = valueProblem(name, value, schema.properties[name] as ArgumentSchema);
    if (problem !== undefined) return { problem: `${tool}: ${problem}` };
  }
  return { args: given };
}

function valueProblem(name: string, value: unknown, schema: ArgumentSchema): string | undefined {
  switch (schema.type) {
    case "string":
      if (typeof value !== "string") return `${name} must be a string`;
      if (schema.minLength !== undefined && value.length < schema.minLength) {
        return `${name} must not be empty`;
      }
      if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value)) {
        return `${name} ${JSON.stringify(value)} does not match ${schema.pattern}`;
      }
      return undefined;
    case "integer": {
      if (typeof value !== "number" || !Number.isInteger(value)) {
        return `${name} must be a whole number`;
      }
      const { minimum: min, maximum: max } = schema;
      if ((min !== undefined && value < min) || (max !== undefined && value > max)) {
        return max === undefined
          ? `${name} must be at least ${min}`
          : `${name} must be from ${min ?? 0} to ${max}`;
      }
      return undefined;
    }
    case "array": {
      if (!Array.isArray(value)) return `${name} must be an array`;
      for (const item of value) {
        const problem = valueProblem(`each of ${name}`, item, schema.items ?? {});
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}
