import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { prepareShim } from "../shim/run-shim";
import { apiCall, type ApiAnswer } from "./api-call";
import { startRelay, type RelayOptions, type RunningRelay } from "./relay";

/** What a suite gets from `relaySuite`: valid once its `beforeAll` has run. */
export interface RelaySuite {
  relay: RunningRelay;
  /** A temp directory of the suite's own, removed after it. */
  dir: string;
  /** The relay's API with a bearer token. */
  api(token: string, method: string, path: string, json?: unknown): Promise<ApiAnswer>;
}

/**
 * Registers the suite's `beforeAll` / `afterAll`: the built shim checked, the relay started
 * under `wrangler dev`, a temp directory made; both removed afterwards.
 */
export function relaySuite(options: RelayOptions, dirPrefix: string): RelaySuite {
  const suite = {
    api: (token: string, method: string, path: string, json?: unknown) =>
      apiCall(suite.relay.url, token, method, path, json),
  } as RelaySuite;
  beforeAll(async () => {
    prepareShim();
    suite.relay = await startRelay(options);
    suite.dir = await mkdtemp(join(tmpdir(), dirPrefix));
  });
  afterAll(async () => {
    await suite.relay?.stop();
    if (suite.dir) await rm(suite.dir, { recursive: true, force: true });
  });
  return suite;
}
