/**
 * Structured logs: one JSON object per line, which Workers Logs and `wrangler tail`
 * index by field. Callers pass ids, sizes and durations — never tokens, signed URLs
 * or file contents.
 */
export type LogLevel = "info" | "warn" | "error";

export function logEvent(
  event: string,
  fields: Record<string, unknown> = {},
  level: LogLevel = "info",
): void {
  const line = JSON.stringify({ level, event, ...fields });
  if (level === "error") console.error(line);
  else if (level === "warn") console.warn(line);
  else console.log(line);
}

/** Milliseconds since `started` (Workers advance the clock at I/O, which is what requests wait on). */
export function since(started: number): number {
  return Date.now() - started;
}

/**
 * A request path fit for logs: share-link (`/d/…`), upload-link (`/u/…`, and every path
 * under it) and `/mcp` transfer-URL (`/mcp/uploads/…`, `/mcp/downloads/…`) tokens are
 * credentials, so they are cut out.
 */
export function loggablePath(path: string): string {
  return path
    .replace(/^\/([du])\/[^/]+/, "/$1/<token>")
    .replace(/^\/mcp\/(uploads|downloads)\/[^/]+/, "/mcp/$1/<token>");
}
