import type { MiddlewareHandler } from "hono";

/**
 * Ends the answer's text with a newline when it lacks one: what `curl -T` prints to a terminal
 * (the stored file's JSON, or the refusal's) then leaves the shell prompt on a line of its own.
 * For small answers only (upload-link PUTs); the body is read whole.
 */
export const endWithNewline: MiddlewareHandler = async (c, next) => {
  await next();
  const text = await c.res.text();
  if (text.endsWith("\n")) {
    c.res = new Response(text, c.res);
    return;
  }
  const headers = new Headers(c.res.headers);
  headers.delete("content-length");
  c.res = new Response(`${text}\n`, { status: c.res.status, headers });
};
