import type { Context } from "hono";
import type { z } from "zod";
import { AppError } from "../errors";

/**
 * Reads a JSON request body and checks it against `schema`. An empty body counts as
 * `{}` so routes whose fields are all optional accept a bare POST.
 */
export async function readJson<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  const text = await c.req.text();
  let value: unknown = {};
  if (text.trim() !== "") {
    const type = c.req.header("content-type") ?? "";
    if (!/^application\/([\w.+-]+\+)?json\b/i.test(type))
      throw new AppError("unsupported_media_type");
    try {
      value = JSON.parse(text);
    } catch {
      throw new AppError("invalid_json");
    }
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    throw new AppError("invalid_request", `${where}${issue?.message ?? "invalid body"}`);
  }
  return result.data;
}
