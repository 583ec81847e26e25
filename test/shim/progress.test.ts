import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { shellQuote } from "../../sdk/src/exec/adapters";
import { relaySuite } from "../support/relay-suite";
import { SHIM, runShim, relayEnv } from "./run-shim";

const run = promisify(execFile);
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("the progress bar", () => {
  // The run's shared relay, a session of this suite's own.
  const suite = relaySuite({}, "airlock-progress-");
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = suite.dir;
    env = relayEnv(suite.relay.url, (await suite.relay.mintSession()).token, 2);
  });

  it("is drawn on a terminal: name, percent and sizes, then cleared", async () => {
    const path = join(dir, "random.bin");
    const bytes = randomBytes(3 * 1024 * 1024);
    await writeFile(path, bytes);
    // script(1) runs the shim on a pseudo-terminal, as in an interactive shell.
    const { stdout } = await run(
      "script",
      ["-qec", [process.execPath, SHIM, "send", path].map(shellQuote).join(" "), "/dev/null"],
      {
        env: { ...process.env, ...env, COLUMNS: "100" },
      },
    );
    expect(stdout).toMatch(/random\.bin {2}\d+% {2}[\d.]+ (?:[KMG]i)?B \/ 3\.0 MiB/);
    expect(stdout).toContain("\r\x1b[2K");
    const url = /http:\/\/127\.0\.0\.1:\d+\/d\/\S+/.exec(stdout)?.[0];
    const served = Buffer.from(await (await fetch(url!)).arrayBuffer());
    expect(sha256(served)).toBe(sha256(bytes));
  });

  it("is not drawn when stderr is not a terminal", async () => {
    const path = join(dir, "quiet.bin");
    await writeFile(path, randomBytes(1024 * 1024));
    const result = await runShim(["send", path], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
  });
});
