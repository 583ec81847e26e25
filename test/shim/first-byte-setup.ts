import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import type { RelaySuite } from "../support/relay-suite";
import { relayEnv } from "./run-shim";
import { shimDrivers, type ShimDriver } from "./shims";

/** 8 MiB: the multipart threshold the first-byte tests lower the shims' to. */
const THRESHOLD = 8 * 1024 * 1024;

/**
 * A shim, a fresh session and a working directory for a send from the first byte: the shim's
 * environment points at the suite's relay, with the multipart threshold lowered to 8 MiB.
 */
export async function firstByteSetUp(suite: RelaySuite, shim: ShimDriver["name"]) {
  const driver = (await shimDrivers(suite.dir)).find((d) => d.name === shim)!;
  const { sessionId, token } = await suite.relay.mintSession();
  const cwd = await mkdtemp(join(suite.dir, "work-"));
  const env = {
    ...relayEnv(suite.relay.url, token),
    AIRLOCK_MULTIPART_THRESHOLD: String(THRESHOLD),
  };
  return { driver, sessionId, token, cwd, env };
}
