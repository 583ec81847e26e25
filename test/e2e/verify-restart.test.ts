import { createHash, randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { partSizeFor } from "../../src/part-plan";
import { relayEnv, runShim } from "../shim/run-shim";
import { relaySuite } from "../support/relay-suite";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const MiB = 1024 * 1024;

/**
 * Verification survives a crash: the relay is killed (SIGKILL) right as `complete` answers,
 * while the verify queue holds or runs the file's message, and started again on the same
 * state. The local queue keeps no messages across a restart, so the sweep's re-send is what
 * finishes the job here (a deployed Queue redelivers an unacknowledged message itself). Either
 * way the file ends verified or gone — never live with a hash nobody checked.
 */
describe("verification across a relay crash", () => {
  // The sweep re-sends verifications pending longer than this; production waits 10 minutes.
  const suite = relaySuite(
    { vars: { VERIFY_RESEND_AFTER_SECONDS: "1" } },
    "airlock-verify-restart-",
  );
  const { api } = suite;

  /** Restarts the relay, runs the sweep once the re-send delay passed, waits for `done`. */
  async function crashThenSettle(done: () => Promise<boolean>): Promise<void> {
    await suite.relay.crashAndRestart();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await suite.relay.runScheduled();
    const deadline = Date.now() + 90_000;
    while (!(await done())) {
      if (Date.now() > deadline)
        throw new Error(`not settled:\n${suite.relay.output().slice(-4000)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  it("an honest gzip upload checked on the queue ends verified, served with its checked hash", async () => {
    // Random hex gzips to about half: ~6 MiB stored, above the 4 MiB the relay checks inline,
    // so the read-back runs on the queue (as for multipart uploads) and the crash can lose it.
    const bytes = Buffer.from(randomBytes(6 * MiB).toString("hex"));
    const path = join(suite.dir, "big.txt");
    await writeFile(path, bytes);
    const { token } = await suite.relay.mintSession();
    const sent = await runShim(["send", path, "--json"], { env: relayEnv(suite.relay.url, token) });
    expect(sent.code, sent.stderr).toBe(0);
    const file = JSON.parse(sent.stdout) as {
      fileId: string;
      url: string;
      status: string;
      uploadedBytes: number;
    };
    expect(file.uploadedBytes).toBeGreaterThan(4 * MiB); // gzip, past the inline check
    expect(file.uploadedBytes).toBeLessThan(bytes.byteLength);
    expect(file.status).toBe("pending");
    expect(sent.stderr).toContain("still being verified");

    await crashThenSettle(async () => {
      const state = await api(token, "GET", `/v1/files/${file.fileId}`);
      return state.status === 200 && state.body.status === "verified";
    });
    const shared = await fetch(file.url);
    expect(shared.status).toBe(200);
    expect(sha256(new Uint8Array(await shared.arrayBuffer()))).toBe(sha256(bytes));
    // Verified content is now a dedup target within the session.
    expect(
      await api(token, "POST", "/v1/uploads", {
        name: "again.bin",
        size: bytes.byteLength,
        sha256: sha256(bytes),
      }),
    ).toMatchObject({ status: 201, body: { status: "deduped" } });
  }, 300_000);

  it("a multipart upload that lied about its hash ends gone, and its hash never dedups", async () => {
    const stored = randomBytes(9 * MiB); // two parts, above what complete verifies inline
    const claimed = sha256(randomBytes(32));
    const partSize = partSizeFor(stored.byteLength);
    const parts = [stored.subarray(0, partSize), stored.subarray(partSize)];
    const { token } = await suite.relay.mintSession();
    const declared = await api(token, "POST", "/v1/uploads", {
      name: "lie.bin",
      size: stored.byteLength,
      sha256: claimed,
      encoding: "identity",
      storedSize: stored.byteLength,
      storedSha256: claimed,
      partSha256: parts.map(sha256),
    });
    expect(declared.status).toBe(201);
    for (const part of declared.body.parts as {
      partNumber: number;
      put: { url: string; headers: Record<string, string> };
    }[]) {
      const response = await fetch(part.put.url, {
        method: "PUT",
        headers: part.put.headers,
        body: parts[part.partNumber - 1],
      });
      expect(response.status).toBeLessThan(300);
    }
    const completed = await api(token, "POST", `/v1/uploads/${declared.body.uploadId}/complete`);
    expect(completed).toMatchObject({ status: 201, body: { status: "pending" } });
    const url = completed.body.url as string;

    await crashThenSettle(
      async () => (await api(token, "GET", `/v1/files/${completed.body.fileId}`)).status === 404,
    );
    expect((await fetch(url)).status).toBe(404);
    expect(
      await api(token, "POST", "/v1/uploads", {
        name: "x.bin",
        size: stored.byteLength,
        sha256: claimed,
      }),
    ).toEqual({ status: 200, body: { status: "missing" } });
  }, 300_000);
});
