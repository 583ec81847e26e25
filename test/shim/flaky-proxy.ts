import { forward, passBack, startLoopbackServer } from "../support/loopback-proxy";

/**
 * How the proxy treats one request: pass it on, answer it itself, drop the connection, or
 * pass it on and drop the connection instead of passing the answer back ("lose-answer": the
 * server did the work, the client never hears of it).
 */
export type Fault =
  { status: number; headers?: Record<string, string>; body?: string } | "reset" | "lose-answer";

/** Decides the fault (if any) for a request, by method, path and how often that route was seen. */
export type FaultRule = (method: string, path: string, seenBefore: number) => Fault | undefined;

export interface FlakyProxy {
  url: string;
  /** `METHOD /path` of every request received, faulted or not, with the fault applied. */
  log: { request: string; fault?: string }[];
  stop(): Promise<void>;
}

/**
 * A loopback HTTP proxy in front of a real server that injects failures by rule: the shim's
 * retries are proven against the real relay, with only the failures made up.
 */
export async function startFlakyProxy(upstream: string, rule: FaultRule): Promise<FlakyProxy> {
  const target = new URL(upstream);
  const log: FlakyProxy["log"] = [];
  const counts = new Map<string, number>();
  const server = await startLoopbackServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    const route = `${req.method} ${path}`;
    const seenBefore = counts.get(route) ?? 0;
    counts.set(route, seenBefore + 1);
    const fault = rule(req.method ?? "GET", path, seenBefore);
    log.push({
      request: route,
      fault: fault === undefined || typeof fault === "string" ? fault : String(fault.status),
    });
    if (fault === "reset") {
      req.socket.destroy();
      return;
    }
    if (typeof fault === "object") {
      req.resume();
      res
        .writeHead(fault.status, { "content-type": "application/json", ...fault.headers })
        .end(fault.body ?? "");
      return;
    }
    forward(req, res, target, (answer) => {
      if (fault !== "lose-answer") return passBack(answer, res);
      answer.resume();
      answer.on("end", () => req.socket.destroy());
    });
  });
  return { url: server.url, log, stop: server.stop };
}
