import http from "node:http";
import type { AddressInfo } from "node:net";

/** A server on 127.0.0.1 for a test: its URL, and a stop that drops its connections. */
export interface LoopbackServer {
  url: string;
  stop(): Promise<void>;
}

/** Starts `handle` on a free port of 127.0.0.1 (tests' proxies in front of the relay or store). */
export async function startLoopbackServer(handle: http.RequestListener): Promise<LoopbackServer> {
  const server = http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Sends `req` on to `upstream` with its headers (the Host header unchanged, so a relay signs
 * URLs that point back at the proxy) and hands the answer to `onAnswer`, which by default
 * passes it back as it is. A failed upstream drops the client's connection.
 */
export function forward(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  upstream: URL,
  onAnswer: (answer: http.IncomingMessage) => void = (answer) => passBack(answer, res),
  headers: http.IncomingHttpHeaders = req.headers,
): void {
  const request = http.request(
    {
      hostname: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers,
    },
    onAnswer,
  );
  request.on("error", () => res.destroy());
  req.pipe(request);
}

/** Passes an upstream's answer back to the client unchanged. */
export function passBack(answer: http.IncomingMessage, res: http.ServerResponse): void {
  res.writeHead(answer.statusCode ?? 502, answer.headers);
  answer.pipe(res);
}
