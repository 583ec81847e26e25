import { afterEach, beforeEach } from "vitest";
import { TOKEN, startFakeRelay, type FakeRelay } from "./fake-relay";
import { runShim, type ShimResult, relayEnv } from "./run-shim";

/**
 * For each test of the calling `describe`: a fresh fake relay (`ctx.relay`), and
 * `ctx.send(args)` running `airlock send` against it with `node` from `cwd()`.
 */
export function sendAgainstFakeRelay(
  node: string,
  cwd: () => string,
): { readonly relay: FakeRelay; send(args: string[]): Promise<ShimResult> } {
  let relay: FakeRelay | undefined;
  beforeEach(async () => {
    relay = await startFakeRelay();
  });
  afterEach(async () => {
    await relay?.stop();
  });
  const current = (): FakeRelay => {
    if (!relay) throw new Error("the fake relay runs only inside a test");
    return relay;
  };
  return {
    get relay() {
      return current();
    },
    send: (args) =>
      runShim(["send", ...args], {
        node,
        cwd: cwd(),
        env: {
          ...relayEnv(current().url, TOKEN),
        },
      }),
  };
}
