import type http from "node:http";
import { forward, passBack, startLoopbackServer } from "../support/loopback-proxy";

/**
 * A proxy in front of the relay that lets parts 1 to `allowParts` through and holds every PUT
 * of a later part unanswered, so a send is caught mid-upload at a known point. It goes by part
 * number, not by request: a part the shim sends again (after wrangler dev's own 503 to a PUT,
 * cloudflare/workers-sdk#14641) still goes through, or the send would wait on it for good.
 */
export async function startHoldingProxy(upstream: string, allowParts: number) {
  const target = new URL(upstream);
  let partsStored = 0;
  const held: http.ServerResponse[] = [];
  let holding = true;
  const server = await startLoopbackServer((req, res) => {
    const partNumber = req.method === "PUT" ? /\/parts\/(\d+)/.exec(req.url ?? "")?.[1] : undefined;
    const isPart = partNumber !== undefined;
    if (isPart && holding && Number(partNumber) > allowParts) {
      held.push(res);
      return;
    }
    forward(req, res, target, (answer) => {
      if (isPart && (answer.statusCode ?? 0) < 300) answer.once("end", () => partsStored++);
      passBack(answer, res);
    });
  });
  return {
    url: server.url,
    ready: () => partsStored >= allowParts && held.length > 0,
    release() {
      holding = false;
      for (const res of held.splice(0)) res.socket?.destroy();
    },
    stop: server.stop,
  };
}
