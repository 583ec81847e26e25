import type http from "node:http";
import type { Call, Refusal } from "./fake-relay-types";

/** The fake relay's (fake-relay.ts) reading of a request and its JSON answers. */

/** Reads a request whole: its Call (with the body parsed as JSON, when it is JSON). */
export async function readCall(
  req: http.IncomingMessage,
): Promise<{ call: Call; raw: Buffer; path: string }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const path = (req.url ?? "/").split("?")[0]!;
  const call: Call = { method: req.method ?? "GET", path, headers: req.headers };
  if (req.headers["content-type"]?.startsWith("application/json")) {
    try {
      call.json = JSON.parse(raw.toString("utf8"));
    } catch {
      call.json = raw.toString("utf8");
    }
  }
  return { call, raw, path };
}

/** Answers with a JSON body, or with a refusal as `{error:{code,message}}`. */
export function jsonAnswers(res: http.ServerResponse) {
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(text)),
      ...headers,
    });
    res.end(text);
  };
  const refuse = (r: Refusal) =>
    json(
      r.status,
      { error: { code: r.code ?? "error", message: r.message ?? "refused" } },
      r.headers,
    );
  return { json, refuse };
}
