import { describe, expect, it } from "vitest";
import { findUploadRequest } from "../../src/db/upload-requests";
import { hexToBase64 } from "../../src/encoding";
import { partSizeFor } from "../../src/part-plan";
import { sweep } from "../../src/services/sweep/sweep";
import { EXPIRED_REQUEST_GRACE_MS } from "../../src/services/upload-links/sweep";
import { MultipartUploadGoneError } from "../../src/storage/blob-store";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { errorOf } from "../support/relay-client";
import { partBytes, partDigests } from "../support/send";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";
import { sweepContext } from "./sweep-support";

for (const backend of backends()) {
  describe(`sweep on ${backend.name}`, () => {
    const { client, store, depsAt } = sweepContext(backend);

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
