import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { z } from "zod";
import { AppError } from "../errors";
import { invalidRequest } from "../services/validation";

/** The most any JSON API body may take: every route's body is far smaller. */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

/**
 * The request body as text, refused with `413 payload_too_large` past `maxBytes`: at once
 * when `Content-Length` says so, otherwise as soon as a chunked body runs past the cap,
 * without reading the rest (Hono's body limit).
 */
export async function readCappedText(c: Context, maxBytes: number): Promise<string> {
  const cap = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new AppError("payload_too_large", `request body is larger than ${maxBytes} bytes`);
    },
  });
  await cap(c, async () => {});
  return c.req.text();
}

/**
 * Reads a JSON request body and checks it against `schema`. An empty body counts as
 * `{}` so routes whose fields are all optional accept a bare POST.
 */
export async function readJson<T extends z.ZodType>(
  c: Context,
  schema: T,
  maxBytes = MAX_JSON_BODY_BYTES,
): Promise<z.infer<T>> {
  const text = await readCappedText(c, maxBytes);
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
  if (!result.success) throw invalidRequest(result.error, "invalid body");
  return result.data;
}
