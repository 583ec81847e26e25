import { createHash, randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { relaySuite } from "../support/relay-suite";
import { loggedEvents } from "../support/relay-log";
import { failureLine } from "./run-shim";
import { runDriver } from "./shims";
import { firstByteSetUp } from "./first-byte-setup";
import { startHoldingProxy } from "./holding-proxy";

// gzip sent from its first byte (docs/api.md, "gzip with the hash at complete"): the shim
// declares gzip without hashes, PUTs each part of the member stream as it fills, and gives the
// SHA-256, stored form and member table with complete.

const MiB = 1024 * 1024;
const suite = relaySuite({}, "airlock-gzip-first-byte-");
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
/** Base64 of random bytes: gzip pays (about 3/4), and its output spans several 8 MiB parts. */
const text = (size: number) => Buffer.from(randomBytes(size).toString("base64").slice(0, size));

describe.each(["node", "python"] as const)("%s shim: gzip from the first byte", (shim) => {
  it("declares gzip without hashes, sends the member stream in parts, and is verified byte-exact", async () => {
    const { driver, sessionId, cwd, env } = await firstByteSetUp(suite, shim);
    const bytes = text(20 * MiB + 12345);
    await writeFile(join(cwd, "log.txt"), bytes);
    const result = await runDriver(driver, ["send", "--wait", "--json", "log.txt"], {
      env,
      cwd,
      home: cwd,
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const sent = JSON.parse(result.stdout.trim()) as SendResult;
    expect(sent).toMatchObject({ sha256: sha256(bytes), deduped: false, status: "verified" });
    // Stored as gzip: fewer bytes went up than the file holds, in more than one part.
    expect(sent.uploadedBytes).toBeGreaterThan(8 * MiB);
    expect(sent.uploadedBytes).toBeLessThan(bytes.length);
    const served = Buffer.from(await (await fetch(sent.url)).arrayBuffer());
    expect(sha256(served)).toBe(sha256(bytes));

    const events = (await loggedEvents(suite.relay)).filter((e) => e.sessionId === sessionId);
    const declared = events.filter((e) => e.event === "upload_declared");
    expect(declared.map((e) => [e.hashAtComplete, e.encoding, e.outcome])).toEqual([
      [true, "gzip", "multipart"],
    ]);
    expect(await storedSizeOf(sent.fileId)).toBe(sent.uploadedBytes);
  });

  it(
    "resumes a gzip send cut short by Ctrl-C: the parts the store holds are not sent again",
    { timeout: 200_000 },
    async () => {
      const { driver, cwd, env } = await firstByteSetUp(suite, shim);
      const bytes = text(24 * MiB);
      await writeFile(join(cwd, "big.txt"), bytes);
      const proxy = await startHoldingProxy(suite.relay.url, 1);
      try {
        const interrupted = await proxy.interrupt(
          [...driver.argv, "send", "--json", "big.txt"],
          cwd,
          {
            PATH: driver.path,
            HOME: cwd,
            TMPDIR: cwd,
            ...env,
            AIRLOCK_URL: proxy.url,
          },
        );
        expect(interrupted.code).toBe(130);
        expect(interrupted.stdout).toBe("");
        // The Python shim says how to resume, without asking the relay how much is stored.
        const resume =
          "airlock: interrupted: run the same command again to resume the upload of big.txt";
        expect(failureLine(interrupted)).toBe(
          shim === "python" ? resume : `${resume} (8.0 MiB of gzip stored)`,
        );
        proxy.release();
        // Run again through the same relay URL (the saved upload is the relay's): it resumes.
        const again = await runDriver(driver, ["send", "--wait", "--json", "big.txt"], {
          env: { ...env, AIRLOCK_URL: proxy.url },
          cwd,
          home: cwd,
        });
        expect(again.stderr).toBe("");
        expect(again.code).toBe(0);
        const resumed = JSON.parse(again.stdout.trim()) as SendResult;
        expect(resumed).toMatchObject({ sha256: sha256(bytes), deduped: false });
        expect(resumed.uploadedBytes).toBe((await storedSizeOf(resumed.fileId)) - 8 * MiB);
        const served = Buffer.from(await (await fetch(resumed.url)).arrayBuffer());
        expect(sha256(served)).toBe(sha256(bytes));
      } finally {
        proxy.release();
        await proxy.stop();
      }
    },
  );
});

/** The stored size of a sent file, as the relay logged it when it verified the upload. */
async function storedSizeOf(fileId: string): Promise<number> {
  const events = await loggedEvents(suite.relay);
  const completed = events.find((e) => e.event === "upload_completed" && e.fileId === fileId);
  const verified = events.find(
    (e) => e.event === "upload_verified" && e.uploadId === completed?.uploadId,
  );
  expect(verified, `upload_verified for ${fileId}`).toBeDefined();
  return verified!.storedSize as number;
}
