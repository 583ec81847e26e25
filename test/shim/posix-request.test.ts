import { spawn } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { collectRun, prepareShim, SHIM } from "./run-shim";
import { POSIX_SHIM, processEnv, required } from "./shims";

/** Runs a shim's `request` with a relay that is never reached (usage is checked first). */
async function request(argv: string[], args: string[]) {
  const child = spawn(argv[0]!, [...argv.slice(1), "request", ...args], {
    env: processEnv({
      PATH: process.env.PATH,
      AIRLOCK_URL: "http://127.0.0.1:9",
      AIRLOCK_TOKEN: "t",
      AIRLOCK_RETRIES: "1",
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collectRun(child);
}

/**
 * The POSIX shim's `request` refuses bad options with the Node shim's exact line and exit 2:
 * sizes by the one unit rule, durations as the Node shim reads them.
 */
describe("the POSIX shim's request: the Node shim's usage errors", () => {
  beforeAll(() => prepareShim());

  it.each([
    [["--max-bytes", "1.5M"]],
    [["--max-bytes", "0"]],
    [["--max-bytes=8192T"]],
    [["--expires", "soon"]],
    [["--expires", "0"]],
    [["--cancel", "req_x", "--name", "a"]],
    [["extra"]],
    [["--bogus"]],
    [["--name"]],
  ])("%j", async (args) => {
    const [fromNode, fromPosix] = await Promise.all([
      request([process.execPath, SHIM], args),
      request([required("dash"), POSIX_SHIM], args),
    ]);
    expect(fromNode.code).toBe(2);
    expect(fromNode.stderrLines).toHaveLength(1);
    expect({
      code: fromPosix.code,
      stderr: fromPosix.stderrLines,
      stdout: fromPosix.stdout,
    }).toEqual({ code: 2, stderr: fromNode.stderrLines, stdout: "" });
  });
});
