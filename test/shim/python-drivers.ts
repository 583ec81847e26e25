import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { prepareShim } from "./run-shim";
import { shimDrivers, type ShimDriver } from "./shims";

/** What the Python shim's test files share: a scratch directory and the node and python drivers. */
export interface PythonAndNode {
  readonly scratch: string;
  readonly node: ShimDriver;
  readonly python: ShimDriver;
}

/**
 * Registers the calling file's `beforeAll` / `afterAll`: the built shim checked, a scratch
 * directory (`prefix`) made and removed, the Node and Python drivers (the Python one with only
 * python3 on its PATH). The getters work once `beforeAll` has run.
 */
export function pythonAndNode(prefix: string): PythonAndNode {
  let state: { scratch: string; node: ShimDriver; python: ShimDriver } | undefined;
  beforeAll(async () => {
    prepareShim();
    const scratch = await mkdtemp(join(tmpdir(), prefix));
    const drivers = await shimDrivers(scratch);
    state = {
      scratch,
      node: drivers.find((d) => d.name === "node")!,
      python: drivers.find((d) => d.name === "python")!,
    };
  });
  afterAll(() => {
    if (state) execFileSync("rm", ["-rf", state.scratch]);
  });
  const get = () => {
    if (!state) throw new Error(`the ${prefix} drivers are made in beforeAll`);
    return state;
  };
  return {
    get scratch() {
      return get().scratch;
    },
    get node() {
      return get().node;
    },
    get python() {
      return get().python;
    },
  };
}
