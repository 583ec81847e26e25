import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A proxy in front of the relay that lets the first `allowParts` part PUTs through and holds
 * every later one unanswered, so a send is caught mid-upload at a known point.
 */
export async function startHoldingProxy(upstream: string, allowParts: number) {
  const target = new URL(upstream);
  let partsSeen = 0;
  let partsStored = 0;
  const held: http.ServerResponse[] = [];
  let holding = true;
  const server = http.createServer((req, res) => {
    const isPart = req.method === "PUT" && /\/parts\/\d+/.test(req.url ?? "");
    if (isPart && holding && partsSeen++ >= allowParts) {
      held.push(res);
      return;
    }
    const forward = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        if (isPart && (answer.statusCode ?? 0) < 300) answer.once("end", () => partsStored++);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    ready: () => partsStored >= allowParts && held.length > 0,
    release() {
      holding = false;
      for (const res of held.splice(0)) res.socket?.destroy();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
