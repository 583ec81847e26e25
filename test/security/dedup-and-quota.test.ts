import { createHash, randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { relayEnv, runShim } from "../shim/run-shim";
import type { ApiAnswer } from "../support/api-call";
import { relaySuite } from "../support/relay-suite";
import { identityDeclaration } from "../support/declarations";

/**
 * A hash is not a key, and no sequence of calls stores more than a quota: the attacks of the
 * trust review, run against `wrangler dev` on the local R2 and D1 as an attacker would, with a
 * session token of their own.
 */
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
/** Long enough that the requests of one upload fit in its window on a busy machine. */
const UPLOAD_URL_TTL_SECONDS = 10;

describe("dedup and quota, attacked with a second session", () => {
  const suite = relaySuite(
    { vars: { UPLOAD_URL_TTL_SECONDS: String(UPLOAD_URL_TTL_SECONDS) } },
    "airlock-security-dedup-",
  );
  const { api } = suite;

  async function sendWithShim(token: string, bytes: Uint8Array, name: string) {
    const path = join(suite.dir, `${Math.random().toString(36).slice(2)}-${name}`);
    await writeFile(path, bytes);
    const result = await runShim(["send", path, "--json"], {
      env: relayEnv(suite.relay.url, token),
    });
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as {
      fileId: string;
      deduped: boolean;
      uploadedBytes: number;
      url: string;
    };
  }

  /** What a declare answers, with the parts that differ per request (ids, URLs, times) masked. */
  function shapeOf(answer: ApiAnswer) {
    return JSON.stringify(answer, (key, value: unknown) =>
      ["uploadId", "expiresAt", "url", "x-amz-checksum-sha256", "content-length"].includes(key)
        ? "…"
        : value,
    );
  }

  it("a hash of someone else's file gets nothing: no bytes, no file, no existence bit", async () => {
    const secret = randomBytes(200_000);
    const victim = await suite.relay.mintSession({ owner: "victim" });
    const sent = await sendWithShim(victim.token, secret, "secret.bin");
    const attacker = await suite.relay.mintSession({ owner: "attacker" });
    const unknown = randomBytes(200_000);

    // The probe: the same answer for existing and non-existing content.
    const probe = (bytes: Uint8Array) =>
      api(attacker.token, "POST", "/v1/uploads", {
        name: "x.bin",
        size: bytes.byteLength,
        sha256: sha256(bytes),
      });
    expect(await probe(secret)).toEqual({ status: 200, body: { status: "missing" } });
    expect(await probe(secret)).toEqual(await probe(unknown));

    // The full declare: upload instructions of the same shape either way.
    const declare = (bytes: Uint8Array) =>
      api(attacker.token, "POST", "/v1/uploads", identityDeclaration(bytes));
    const forSecret = await declare(secret);
    expect(forSecret.status).toBe(201);
    expect(forSecret.body.status).toBe("upload");
    expect(shapeOf(forSecret)).toBe(shapeOf(await declare(unknown)));

    // Completing without the bytes: nothing to complete (the upload's key is its own).
    expect(
      await api(attacker.token, "POST", `/v1/uploads/${forSecret.body.uploadId}/complete`),
    ).toMatchObject({ status: 409, body: { error: { code: "upload_not_uploaded" } } });
    // The victim's file by id: not found for another session.
    for (const path of [`/v1/files/${sent.fileId}`, `/v1/files/${sent.fileId}/content`]) {
      expect(await api(attacker.token, "GET", path)).toMatchObject({
        status: 404,
        body: { error: { code: "file_not_found" } },
      });
    }
    expect((await api(attacker.token, "GET", "/v1/files")).body.files).toEqual([]);
  });

  it("dedups within an owner's sessions, never across owners, and not after a delete", async () => {
    const bytes = randomBytes(150_000);
    const first = await suite.relay.mintSession({ owner: "alice" });
    const sent = await sendWithShim(first.token, bytes, "a.bin");
    expect(sent).toMatchObject({ deduped: false, uploadedBytes: bytes.byteLength });

    const sibling = await suite.relay.mintSession({ owner: "alice" });
    expect(await sendWithShim(sibling.token, bytes, "a.bin")).toMatchObject({
      deduped: true,
      uploadedBytes: 0,
    });
    const stranger = await suite.relay.mintSession({ owner: "mallory" });
    const theirs = await sendWithShim(stranger.token, bytes, "a.bin");
    expect(theirs).toMatchObject({ deduped: false, uploadedBytes: bytes.byteLength });
    expect(sha256(new Uint8Array(await (await fetch(theirs.url)).arrayBuffer()))).toBe(
      sha256(bytes),
    );

    // A session without an owner is a scope of its own; a delete takes the file out of it.
    const alone = await suite.relay.mintSession();
    const mine = await sendWithShim(alone.token, bytes, "b.bin");
    expect(mine.deduped).toBe(false);
    expect((await api(alone.token, "DELETE", `/v1/files/${mine.fileId}`)).status).toBe(200);
    expect(await sendWithShim(alone.token, bytes, "b.bin")).toMatchObject({
      deduped: false,
      uploadedBytes: bytes.byteLength,
    });
  });

  it("an upload completed after its URL expired is refused and stores nothing; resuming it re-checks the quota", async () => {
    async function declareAndPut(token: string, bytes: Uint8Array) {
      const declared = await api(token, "POST", "/v1/uploads", identityDeclaration(bytes, "q.bin"));
      expect(declared.status).toBe(201);
      const put = declared.body.put as { url: string; headers: Record<string, string> };
      const response = await fetch(put.url, { method: "PUT", headers: put.headers, body: bytes });
      expect(response.status).toBeLessThan(300);
      return declared.body.uploadId as string;
    }
    // Two sessions of 10,000 bytes, so that one wait for the URLs to expire serves both cases.
    const { token } = await suite.relay.mintSession({ quotaBytes: 10_000 });
    const resumed = await suite.relay.mintSession({ quotaBytes: 10_000 });
    const stored = await declareAndPut(resumed.token, randomBytes(6000));
    expect((await api(resumed.token, "POST", `/v1/uploads/${stored}/complete`)).status).toBe(201);
    // Declare, PUT, wait for the URL to expire, repeat: each fits the quota on its own.
    const first = await declareAndPut(token, randomBytes(6000));
    const third = await declareAndPut(resumed.token, randomBytes(4000));
    await new Promise((resolve) => setTimeout(resolve, (UPLOAD_URL_TTL_SECONDS + 1) * 1000));
    const second = await declareAndPut(token, randomBytes(6000));

    const late = await api(token, "POST", `/v1/uploads/${first}/complete`);
    expect(late).toMatchObject({ status: 410, body: { error: { code: "upload_expired" } } });
    expect(late.body.error?.message).toMatch(/expired at .* before it was completed; renew it/);
    expect((await api(token, "POST", `/v1/uploads/${second}/complete`)).status).toBe(201);
    const files = (await api(token, "GET", "/v1/files")).body.files as { size: number }[];
    expect(files.reduce((sum, file) => sum + file.size, 0)).toBe(6000);
    // Renewing the late one would put 12,000 bytes in a 10,000-byte quota: refused.
    expect(await api(token, "GET", `/v1/uploads/${first}`)).toMatchObject({
      status: 413,
      body: { error: { code: "quota_exceeded" } },
    });
    expect(await api(token, "POST", `/v1/uploads/${first}/complete`)).toMatchObject({
      status: 410,
    });

    // An expired upload brought back by a resume must fit again: with 6,000 bytes stored and
    // another 4,000 declared since it expired, it does not.
    await declareAndPut(resumed.token, randomBytes(4000));
    expect(await api(resumed.token, "GET", `/v1/uploads/${third}`)).toMatchObject({
      status: 413,
      body: { error: { code: "quota_exceeded" } },
    });
  });
});
