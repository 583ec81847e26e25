import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shellQuote } from "../../sdk/src/exec/adapters";
import { TOKEN, startFakeRelay, type FakeRelay } from "./fake-relay";
import { SHIM, prepareShim, runShim, relayEnv } from "./run-shim";

const run = promisify(execFile);

describe("the progress bar", () => {
  let relay: FakeRelay;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    prepareShim();
    relay = await startFakeRelay();
    dir = await mkdtemp(join(tmpdir(), "airlock-progress-"));
    env = relayEnv(relay.url, TOKEN, 2);
  });

  afterAll(async () => {
    await relay?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("is drawn on a terminal: name, percent and sizes, then cleared", async () => {
    const path = join(dir, "random.bin");
    await writeFile(path, randomBytes(3 * 1024 * 1024));
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
    expect(stdout).toMatch(/http:\/\/127\.0\.0\.1:\d+\/d\//);
  });

  it("is not drawn when stderr is not a terminal", async () => {
    const path = join(dir, "quiet.bin");
    await writeFile(path, randomBytes(1024 * 1024));
    const result = await runShim(["send", path], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
  });
});
