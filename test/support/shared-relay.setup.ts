import { rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import { startRelay } from "./relay";
import { migrate, STATE_TEMPLATE_VAR } from "./relay-state";

/** The relay every suite that needs no settings of its own shares (`sharedRelay()`). */
export interface ProvidedRelay {
  url: string;
  adminToken: string;
  logPath: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    sharedRelay: ProvidedRelay;
  }
}

const checkout = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The node project's set-up, once per run: a migrated local state every relay starts from a
 * copy of (the test files' processes inherit its path), and one `wrangler dev` on the
 * embedded default storage for the suites that do not depend on a fresh relay of their own.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await rm(fileURLToPath(new URL("../../test-artifacts/relay-logs/", import.meta.url)), {
    recursive: true,
    force: true,
  });
  const template = await migrate(checkout, process.env);
  process.env[STATE_TEMPLATE_VAR] = template;
  const relay = await startRelay();
  project.provide("sharedRelay", {
    url: relay.url,
    adminToken: relay.adminToken,
    logPath: relay.logPath,
  });
  return async () => {
    await relay.stop();
    await rm(template, { recursive: true, force: true });
  };
}
