import { createExecutionContext, createScheduledController, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { extendBlob } from "../../src/db/blobs";
import { findSession } from "../../src/db/sessions";
import { findUploadRequest } from "../../src/db/upload-requests";
import { hexToBase64 } from "../../src/encoding";
import worker from "../../src/index";
import { declareUpload } from "../../src/services/uploads/declare-upload";
import { partSizeFor } from "../../src/part-plan";
import { STALE_UPLOAD_GRACE_MS, sweep } from "../../src/services/sweep/sweep";
import { EXPIRED_REQUEST_GRACE_MS } from "../../src/services/upload-links/sweep";
import { createBlobStore, uploadKey } from "../../src/storage";
import { MultipartUploadGoneError } from "../../src/storage/blob-store";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { errorOf, ORIGIN, RelayClient } from "../support/relay-client";
import {
  declare,
  describe as describeBytes,
  partBytes,
  partDigests,
  putBytes,
  upload,
  type UploadAnswer,
} from "../support/send";
import { depsAt as depsAtClock } from "../support/deps";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";

const DAY = 86_400_000;

for (const backend of backends()) {
  describe(`sweep on ${backend.name}`, () => {
    const client = new RelayClient(backend.env);
    const config = readConfig(backend.env);
    const ttl = config.fileTtlSeconds * 1000;
    const store = createBlobStore(config, backend.env);

    const depsAt = (now: number) => depsAtClock(backend.env, store, now);

    async function blobRow(sha256: string) {
      return backend.env.DB.prepare("SELECT expires_at, stored_key FROM blobs WHERE sha256 = ?")
        .bind(sha256)
        .first<{ expires_at: number; stored_key: string }>();
    }

    /** The one stored copy of a verified file's content (on s3, moved to its content key). */
    async function storedKeyOf(sha256: string): Promise<string> {
      const row = await blobRow(sha256);
      if (!row) throw new Error(`no blob for ${sha256}`);
      return row.stored_key;
    }

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

    describe("upload links", () => {
      const TWO_PARTS = 8 * 1024 * 1024 + 4096;

      interface LinkState {
        status: string;
        uploadId: string;
        missing?: number[];
      }

      async function createRequest(token: string, body: object = {}): Promise<CreatedRequest> {
        const response = await client.call("POST", "/v1/requests", { token, json: body });
        expect(response.status, await response.clone().text()).toBe(201);
        return response.json();
      }

      const linkPath = (created: CreatedRequest) => new URL(created.url).pathname;

      async function startUpload(created: CreatedRequest, bytes: Uint8Array): Promise<LinkState> {
        const response = await client.call("POST", `${linkPath(created)}/uploads`, {
          json: {
            name: "asked.bin",
            size: bytes.byteLength,
            sha256: await sha256Hex(bytes),
            partSha256: await partDigests(bytes, bytes.byteLength),
          },
        });
        expect(response.status, await response.clone().text()).toBe(201);
        return response.json();
      }

      async function sendPart(
        created: CreatedRequest,
        state: LinkState,
        bytes: Uint8Array,
        n: number,
      ) {
        const part = partBytes(bytes, partSizeFor(bytes.byteLength), n);
        const path = `${linkPath(created)}/uploads/${state.uploadId}/parts/${n}`;
        const response = await client.call("PUT", path, {
          body: part,
          headers: {
            "content-length": String(part.byteLength),
            "x-amz-checksum-sha256": hexToBase64(await sha256Hex(part)),
          },
        });
        expect(response.status, await response.clone().text()).toBe(204);
      }

      async function sendAll(created: CreatedRequest, bytes: Uint8Array): Promise<LinkState> {
        const state = await startUpload(created, bytes);
        for (const n of state.missing ?? []) await sendPart(created, state, bytes, n);
        const path = `${linkPath(created)}/uploads/${state.uploadId}/complete`;
        const done = await client.call("POST", path);
        expect(done.status, await done.clone().text()).toBe(200);
        return done.json();
      }

      async function inboxFileIds(token: string): Promise<string[]> {
        const response = await client.call("GET", "/v1/inbox", { token });
        const { items } = (await response.json()) as { items: { file: { fileId: string } }[] };
        return items.map((item) => item.file.fileId);
      }

      const requestRow = (id: string) => findUploadRequest(backend.env.DB, id);

      it("deletes requests a day past their expiry and gives up the upload a link still held", async () => {
        const { token } = await client.mintSession({ ttlSeconds: 30 * 86_400 });
        // Open, with an unfinished upload holding it: one of two parts stored.
        const held = await createRequest(token, { ttlSeconds: 60 });
        const heldBytes = randomBytes(TWO_PARTS);
        const state = await startUpload(held, heldBytes);
        await sendPart(held, state, heldBytes, 1);
        // Received through a plain PUT.
        const received = await createRequest(token, { ttlSeconds: 60 });
        const bytes = randomBytes(3000);
        expect((await client.fetch(received.url, { method: "PUT", body: bytes })).status).toBe(201);
        const fileId = (await requestRow(received.requestId))!.fileId!;
        // Open, and still working at the time of the sweep.
        const open = await createRequest(token, { ttlSeconds: 30 * 86_400 });

        const expiries = [held, received].map((created) => Date.parse(created.expiresAt));
        await sweep(depsAt(Math.min(...expiries) + EXPIRED_REQUEST_GRACE_MS - 1000));
        expect(await requestRow(held.requestId)).not.toBeNull();
        expect(await requestRow(received.requestId)).not.toBeNull();

        const result = await sweep(depsAt(Math.max(...expiries) + EXPIRED_REQUEST_GRACE_MS + 1000));
        expect(result.requestsDeleted).toBeGreaterThanOrEqual(2);
        expect(await requestRow(held.requestId)).toBeNull();
        expect(await requestRow(received.requestId)).toBeNull();
        expect(await requestRow(open.requestId)).not.toBeNull();
        const gone = await client.call("GET", `/v1/requests/${held.requestId}`, { token });
        expect(await errorOf(gone)).toEqual({
          status: 404,
          code: "not_found",
          message: "no such upload request",
        });
        expect((await client.fetch(held.url)).status).toBe(404);

        // The held upload no longer counts, and its stored part went with its multipart upload.
        const upload = await backend.env.DB.prepare(
          "SELECT status, stored_key, store_upload_id FROM uploads WHERE id = ?",
        )
          .bind(state.uploadId)
          .first<{ status: string; stored_key: string; store_upload_id: string }>();
        expect(upload?.status).toBe("rejected");
        const target = {
          uploadId: state.uploadId,
          storeUploadId: upload!.store_upload_id,
          key: upload!.stored_key,
        };
        if (backend.name === "s3") {
          await expect(store.listParts(target)).rejects.toBeInstanceOf(MultipartUploadGoneError);
        } else {
          expect(await store.listParts(target)).toEqual([]);
        }

        // What the received link brought stays: the file is the session's, in its inbox.
        expect(await inboxFileIds(token)).toContain(fileId);
        const content = await client.call("GET", `/v1/files/${fileId}/content`, { token });
        expect(content.status).toBe(200);
        expect(await sha256Hex(await content.arrayBuffer())).toBe(await sha256Hex(bytes));
      });

      it("keeps an expired request whose file is still being verified until it is settled", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token, { ttlSeconds: 60 });
        const bytes = randomBytes(TWO_PARTS);
        const later = Date.parse(created.expiresAt) + EXPIRED_REQUEST_GRACE_MS + 1000;
        client.holdVerification();
        try {
          expect((await sendAll(created, bytes)).status).toBe("verifying");
          await sweep(depsAt(later));
          expect((await requestRow(created.requestId))?.receivedAt).toBeNull();
          await client.runQueued();
        } finally {
          client.resumeVerification();
        }
        const { fileId } = (await requestRow(created.requestId))!;
        expect(await inboxFileIds(token)).toEqual([fileId]);
        await sweep(depsAt(later));
        expect(await requestRow(created.requestId)).toBeNull();
        expect(await inboxFileIds(token)).toEqual([fileId]);
      });

      it("settles a request whose file the queue verified before the link recorded it", async () => {
        const { token } = await client.mintSession();
        const created = await createRequest(token);
        const bytes = randomBytes(TWO_PARTS);
        const clearFile = backend.env.DB.prepare(
          "UPDATE upload_requests SET file_id = ?1 WHERE id = ?2",
        );
        client.holdVerification();
        try {
          expect((await sendAll(created, bytes)).status).toBe("verifying");
          const { fileId } = (await requestRow(created.requestId))!;
          // The race: the queue's job runs while the link has not recorded its file yet.
          await clearFile.bind(null, created.requestId).run();
          await client.runQueued();
          await clearFile.bind(fileId, created.requestId).run();
        } finally {
          client.resumeVerification();
        }
        expect(await inboxFileIds(token)).toEqual([]);
        const result = await sweep(depsAt(Date.now()));
        expect(result.requestsSettled).toBeGreaterThanOrEqual(1);
        const { fileId, receivedAt } = (await requestRow(created.requestId))!;
        expect(receivedAt).toEqual(expect.any(Number));
        expect(await inboxFileIds(token)).toEqual([fileId]);
      });
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
