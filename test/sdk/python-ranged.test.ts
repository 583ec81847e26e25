import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sharedRelay } from "../support/shared-relay";

/**
 * The Python SDK's downloads in parallel ranges (sdk-python/tests/test_ranged.py, the standard
 * library's unittest) against the shared relay (r2): the cases test/sdk/ranged-download.test.ts
 * holds the TypeScript SDK to. Apart from python-sdk.test.ts, which starts its own relays, sshd
 * and fakes for the other modules: this one needs only a relay.
 */
const root = fileURLToPath(new URL("../..", import.meta.url));

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "airlock-python-ranged-"));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the Python SDK's ranged downloads (python3 -m unittest test_ranged)", () => {
  it("passes, none skipped", async () => {
    const relay = sharedRelay();
    const env = {
      ...process.env,
      AIRLOCK_TEST_URL: relay.url,
      AIRLOCK_TEST_ADMIN_TOKEN: relay.adminToken,
      AIRLOCK_TEST_DIR: dir,
      PYTHONPATH: join(root, "sdk-python/src"),
      PYTHONDONTWRITEBYTECODE: "1",
    };
    const { code, output } = await new Promise<{ code: number; output: string }>(
      (resolve, reject) => {
        const child = spawn("python3", ["-m", "unittest", "-v", "test_ranged"], {
          cwd: join(root, "sdk-python/tests"),
          env,
          stdio: ["ignore", "pipe", "pipe"],
        });
        let text = "";
        child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()));
        child.stderr.on("data", (chunk: Buffer) => (text += chunk.toString()));
        child.once("error", reject);
        child.once("close", (status) => resolve({ code: status ?? 1, output: text }));
      },
    );
    expect(code, output).toBe(0);
    expect(output, output).toMatch(/^OK$/m);
    expect(output, output).not.toMatch(/skipped/);
    expect(Number(/^Ran (\d+) tests? in/m.exec(output)?.[1]), output).toBe(2);
  }, 120_000);
});
