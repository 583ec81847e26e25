import { createExecutionContext, createScheduledController, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { extendBlob } from "../../src/db/blobs";
import { findSession } from "../../src/db/sessions";
import worker from "../../src/index";
import { declareUpload } from "../../src/services/uploads/declare-upload";
import { STALE_UPLOAD_GRACE_MS, sweep } from "../../src/services/sweep/sweep";
import { uploadKey } from "../../src/storage";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { ORIGIN, RelayClient } from "../support/relay-client";
import {
  declare,
  describe as describeBytes,
  putBytes,
  upload,
  type UploadAnswer,
} from "../support/send";
import { DAY, sweepContext } from "./sweep-support";

for (const backend of backends()) {
  describe(`sweep on ${backend.name}`, () => {
    const { client, ttl, store, depsAt, blobRow, storedKeyOf } = sweepContext(backend);

    it("keeps blobs until they expire, then deletes the row and the object once", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(3000);
      const file = await upload(client, token, bytes, "a.bin");
      const key = await storedKeyOf(file.sha256);
      const expiresAt = Date.parse(file.expiresAt);

      await sweep(depsAt(expiresAt - 1000));
      expect(await blobRow(file.sha256)).not.toBeNull();
      expect(await store.head(key)).not.toBeNull();

      // Two sweeps at once: exactly one claims the row; neither fails.
      const results = await Promise.all([
        sweep(depsAt(expiresAt + 1000)),
        sweep(depsAt(expiresAt + 1000)),
      ]);
      expect(await blobRow(file.sha256)).toBeNull();
      expect(await store.head(key)).toBeNull();
      expect(results.reduce((n, r) => n + r.blobsDeleted, 0)).toBeGreaterThanOrEqual(1);
      // And again: nothing left to do for it, no error.
      await sweep(depsAt(expiresAt + 2000));
      expect(await store.head(key)).toBeNull();
      // Gone content is not a dedup target: the next send uploads the bytes again.
      const again = await upload(client, token, bytes, "again.bin");
      expect(again.uploadedBytes).toBe(3000);
      expect((await client.fetch(again.url)).status).toBe(200);
    });

    it("keeps a blob whose expiry passed while a live file still uses it", async () => {
      const { token } = await client.mintSession();
      const file = await upload(client, token, randomBytes(2000), "b.bin");
      // Simulate a blob row that lags its file (e.g. written by an older relay).
      await backend.env.DB.prepare("UPDATE blobs SET expires_at = ? WHERE sha256 = ?")
        .bind(Date.now() - 1, file.sha256)
        .run();
      await sweep(depsAt(Date.now()));
      expect(await blobRow(file.sha256)).not.toBeNull();
      expect((await client.fetch(file.url)).status).toBe(200);
    });

    it("a dedup hit just before the old blob expires keeps the bytes for the new file", async () => {
      const { sessionId, token } = await client.mintSession({ ttlSeconds: 30 * 86_400 });
      const bytes = randomBytes(4000);
      const old = await upload(client, token, bytes, "old.bin");
      const oldExpiry = Date.parse(old.expiresAt);
      const oldKey = await storedKeyOf(old.sha256);
      const session = (await findSession(backend.env.DB, sessionId))!;

      // One minute before the old blob expires, the same content is sent again.
      const hitAt = oldExpiry - 60_000;
      const { declared } = await describeBytes(bytes, "new.bin");
      const answer = await declareUpload(depsAt(hitAt), session, declared, ORIGIN);
      expect(answer.status).toBe("deduped");
      if (answer.status !== "deduped") return;
      const newExpiry = Date.parse(answer.file.expiresAt);
      expect(newExpiry).toBe(hitAt + ttl);
      expect((await blobRow(old.sha256))?.expires_at).toBe(newExpiry);

      // The sweep at (and after) the old expiry keeps the blob and its object.
      await sweep(depsAt(oldExpiry + 1000));
      expect(await blobRow(old.sha256)).not.toBeNull();
      expect(await store.head(oldKey)).not.toBeNull();
      const response = await client.fetch(answer.file.url);
      expect(response.status).toBe(200);
      expect(await sha256Hex(await response.arrayBuffer())).toBe(old.sha256);

      // Once the new file has expired too, the blob goes.
      await sweep(depsAt(newExpiry + 1000));
      expect(await blobRow(old.sha256)).toBeNull();
      expect(await store.head(oldKey)).toBeNull();
    });

    it("writes again the object of content re-sent past the bucket's age rule, before the rule could cut it", async () => {
      const { sessionId, token } = await client.mintSession({ ttlSeconds: 30 * 86_400 });
      const session = (await findSession(backend.env.DB, sessionId))!;
      const bytes = randomBytes(6000);
      const first = await upload(client, token, bytes, "daily.csv");
      const sentAt = Date.parse(first.expiresAt) - ttl;
      const HOUR = 3_600_000;
      /** Sends the same content again at `at`: a dedup hit, whose object is the one to keep. */
      const resend = async (at: number) => {
        const { declared } = await describeBytes(bytes, "daily.csv");
        const answer = await declareUpload(depsAt(at), session, declared, ORIGIN);
        if (answer.status !== "deduped") throw new Error(`not a dedup hit: ${answer.status}`);
        const row = await backend.env.DB.prepare("SELECT stored_key FROM files WHERE id = ?")
          .bind(answer.file.fileId)
          .first<{ stored_key: string }>();
        return { file: answer.file, key: row!.stored_key };
      };

      // Re-sent an hour before the last copy expires: the bucket's rule (2 × TTL + 1 day from
      // the object's write) still outlasts the new file by more than a day.
      const second = await resend(sentAt + ttl - HOUR);
      const written = (await store.writtenAt(second.key))!;
      expect(written).not.toBeNull();
      await sweep(depsAt(sentAt + ttl - HOUR / 2));
      expect(await store.writtenAt(second.key)).toBe(written);
      await new Promise((resolve) => setTimeout(resolve, 1100)); // S3 times have whole seconds

      // Re-sent again: this file lives until 3 × TTL after the object's write, past the rule.
      const third = await resend(sentAt + 2 * ttl - 2 * HOUR);
      expect(third.key).toBe(second.key);
      const result = await sweep(depsAt(sentAt + 2 * ttl - 1.5 * HOUR));
      expect(result.objectsRewritten).toBeGreaterThanOrEqual(1);
      const rewritten = (await store.writtenAt(third.key))!;
      expect(rewritten).toBeGreaterThan(written);
      const response = await client.fetch(third.file.url);
      expect(response.status).toBe(200);
      expect(await sha256Hex(await response.arrayBuffer())).toBe(first.sha256);

      // Each dedup hit is checked once: the next run leaves the object as it is.
      await sweep(depsAt(sentAt + 2 * ttl + 2 * HOUR));
      expect(await store.writtenAt(third.key)).toBe(rewritten);
    });

    it("a dedup hit never extends a blob that expired after it was read", async () => {
      const { token } = await client.mintSession();
      const old = await upload(client, token, randomBytes(1500), "old.bin");
      const oldExpiry = Date.parse(old.expiresAt);
      // declareUpload read the blob live at T, and the clock passed its expiry before
      // the extension (or the sweep removed it): the extension must not apply.
      expect(await extendBlob(backend.env.DB, old.sha256, oldExpiry + ttl, oldExpiry + 1)).toBe(
        false,
      );
      expect((await blobRow(old.sha256))?.expires_at).toBe(oldExpiry);
      expect(await extendBlob(backend.env.DB, old.sha256, oldExpiry + ttl, oldExpiry - 1)).toBe(
        true,
      );
      expect((await blobRow(old.sha256))?.expires_at).toBe(oldExpiry + ttl);
    });

    it("gives up pending uploads a day after their URL expired and deletes their bytes", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(1000);
      const { declared, stored } = await describeBytes(bytes, "abandoned.bin");
      const answer = (await (await declare(client, token, declared)).json()) as UploadAnswer;
      if (answer.status !== "upload") throw new Error("expected an upload");
      expect((await putBytes(client, answer.put, stored)).ok).toBe(true);
      const key = uploadKey(declared.storedSha256, answer.uploadId);
      const urlExpiry = Date.parse(answer.expiresAt);

      await sweep(depsAt(urlExpiry + 1000));
      expect(await store.head(key)).not.toBeNull(); // still inside the grace period
      await sweep(depsAt(urlExpiry + STALE_UPLOAD_GRACE_MS + 1000));
      expect(await store.head(key)).toBeNull();
      const status = await backend.env.DB.prepare("SELECT status FROM uploads WHERE id = ?")
        .bind(answer.uploadId)
        .first<{ status: string }>();
      expect(status?.status).toBe("rejected");
      const done = await client.call("POST", `/v1/uploads/${answer.uploadId}/complete`, { token });
      expect(done.status).toBe(409);
    });
  });
}

describe("the scheduled handler", () => {
  it("runs the sweep at the trigger's scheduled time", async () => {
    const client = new RelayClient(env);
    const { token } = await client.mintSession();
    const file = await upload(client, token, randomBytes(2500), "cron.bin");
    const link = (await (
      await client.call("POST", `/v1/files/${file.fileId}/links`, {
        token,
        json: { ttlSeconds: 60 },
      })
    ).json()) as { url: string };
    expect(link.url).toContain("lnk_");
    const key = uploadKey(file.sha256, file.uploadId);

    const controller = createScheduledController({
      scheduledTime: new Date(Date.parse(file.expiresAt) + DAY),
      cron: "17 * * * *",
    });
    const ctx = createExecutionContext();
    await worker.scheduled(controller, env, ctx);
    expect(await env.BUCKET.head(key)).toBeNull();
    const row = await env.DB.prepare("SELECT 1 FROM blobs WHERE sha256 = ?")
      .bind(file.sha256)
      .first();
    expect(row).toBeNull();
    const links = await env.DB.prepare("SELECT COUNT(*) AS n FROM links WHERE file_id = ?")
      .bind(file.fileId)
      .first<{ n: number }>();
    expect(links?.n).toBe(0);
  });
});
