import { spawn } from "node:child_process";
import type http from "node:http";
import { forward, passBack, startLoopbackServer } from "../support/loopback-proxy";
import { collectRun, type ShimResult } from "./run-shim";

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
  const ready = () => partsStored >= allowParts && held.length > 0;
  return {
    url: server.url,
    ready,
    /**
     * Runs `argv` (a send through this proxy) with exactly `env`, sends it SIGINT once the
     * proxy holds a part after the allowed ones were stored (or the run ends first), and
     * returns how it ended.
     */
    async interrupt(argv: string[], cwd: string, env: Record<string, string>): Promise<ShimResult> {
      const [program, ...args] = argv;
      const child = spawn(program!, args, {
        cwd,
        env: env as NodeJS.ProcessEnv,
        stdio: ["ignore", "pipe", "pipe"],
      });
      const run = collectRun(child as Parameters<typeof collectRun>[0]);
      while (!ready() && child.exitCode === null) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      child.kill("SIGINT");
      return run;
    },
    release() {
      holding = false;
      for (const res of held.splice(0)) res.socket?.destroy();
    },
    stop: server.stop,
  };
}
