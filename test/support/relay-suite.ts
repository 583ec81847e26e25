import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { prepareShim } from "../shim/run-shim";
import { apiCall, type ApiAnswer } from "./api-call";
import { startRelay, type RelayOptions, type RunningRelay } from "./relay";
import { sharedRelay } from "./shared-relay";

/** What a suite gets from `relaySuite`: valid once its `beforeAll` has run. */
export interface RelaySuite {
  relay: RunningRelay;
  /** A temp directory of the suite's own, removed after it. */
  dir: string;
  /** The relay's API with a bearer token. */
  api(token: string, method: string, path: string, json?: unknown): Promise<ApiAnswer>;
}

/**
 * Registers the suite's `beforeAll` / `afterAll`: the built shim checked, the relay (the run's
 * shared one when the suite asks for no settings, else its own under `wrangler dev`), a temp
 * directory made; its own relay and the directory removed afterwards.
 */
export function relaySuite(options: RelayOptions, dirPrefix: string): RelaySuite {
  const suite = {
    api: (token: string, method: string, path: string, json?: unknown) =>
      apiCall(suite.relay.url, token, method, path, json),
  } as RelaySuite;
  beforeAll(async () => {
    prepareShim();
    suite.relay = isDefault(options) ? sharedRelay() : await startRelay(options);
    suite.dir = await mkdtemp(join(tmpdir(), dirPrefix));
  });
  afterAll(async () => {
    await suite.relay?.stop();
    if (suite.dir) await rm(suite.dir, { recursive: true, force: true });
  });
  return suite;
}

function isDefault(options: RelayOptions): boolean {
  return options.storage === undefined && options.vars === undefined && options.root === undefined;
}
