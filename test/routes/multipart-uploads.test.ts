import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { partSizeFor } from "../../src/part-plan";
import { RESUME_WINDOW_MS } from "../../src/services/uploads/multipart-upload";
import { uploadState } from "../../src/services/uploads/complete-upload";
import { STALE_UPLOAD_GRACE_MS, sweep } from "../../src/services/sweep/sweep";
import { findSession } from "../../src/db/sessions";
import { MultipartUploadGoneError } from "../../src/storage/blob-store";
import { blobKey, createBlobStore } from "../../src/storage";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { errorOf, ORIGIN, RelayClient } from "../support/relay-client";
import {
  complete,
  declare,
  describe as describeBytes,
  partBytes,
  partDigests,
  putBytes,
  type MultipartAnswer,
  type UploadState,
} from "../support/send";
import { depsAt as depsAtClock } from "../support/deps";

const MiB = 1024 * 1024;
/** Two parts: one full 8 MiB part and a short last one. */
const TWO_PARTS = 8 * MiB + 4096;

for (const backend of backends()) {
  describe(`multipart uploads on ${backend.name}`, () => {
    const client = new RelayClient(backend.env);
    const config = readConfig(backend.env);
    const store = createBlobStore(config, backend.env);

    const depsAt = (now: number) => depsAtClock(backend.env, store, now);

    /** Declares `bytes` as a multipart upload; returns the answer and the stored bytes. */
    async function declareMultipart(
      token: string,
      bytes: Uint8Array,
      encoding: "identity" | "gzip" = "identity",
      lie: Partial<{ sha256: string; storedSha256: string }> = {},
    ) {
      const { declared, stored } = await describeBytes(bytes, "weights.bin", encoding);
      const partSha256 = await partDigests(stored, bytes.byteLength);
      const body = { ...declared, ...lie, partSha256 };
      const response = await declare(client, token, body);
      expect(response.status).toBe(201);
      const answer = (await response.json()) as MultipartAnswer;
      expect(answer.status).toBe("multipart");
      return { answer, stored, declared: body };
    }

    async function putPart(answer: MultipartAnswer, stored: Uint8Array, partNumber: number) {
      const part = answer.parts.find((p) => p.partNumber === partNumber);
      if (!part) throw new Error(`part ${partNumber} not offered`);
      const bytes = partBytes(stored, answer.partSize, partNumber);
      const response = await putBytes(client, part.put, bytes);
      expect(response.status, await response.clone().text()).toBe(200);
    }

    async function stateOf(token: string, uploadId: string): Promise<Response> {
      return client.call("GET", `/v1/uploads/${uploadId}`, { token });
    }

    it("takes parts in any order and serves the assembled bytes byte-exact", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(TWO_PARTS);
      const { answer, stored } = await declareMultipart(token, bytes);
      expect(answer.partSize).toBe(partSizeFor(TWO_PARTS));
      expect(answer.partCount).toBe(2);
      expect(answer.parts.map((p) => p.partNumber)).toEqual([1, 2]);
      expect(answer.parts[1]?.put.headers["content-length"]).toBe("4096");

      await putPart(answer, stored, 2);
      await putPart(answer, stored, 1);
      const done = await complete(client, token, answer.uploadId);
      expect(done.status).toBe(201);
      const file = (await done.json()) as { url: string; sha256: string; fileId: string };
      const served = await client.fetch(file.url);
      expect(await sha256Hex(await served.arrayBuffer())).toBe(await sha256Hex(bytes));

      // Read back and verified: now a dedup target within its owner scope.
      const other = { token };
      const probe = await declare(client, other.token, {
        name: "again.bin",
        size: bytes.byteLength,
        sha256: await sha256Hex(bytes),
      });
      expect(((await probe.json()) as { status: string }).status).toBe("deduped");
    });

    it("assembles a gzip upload in parts and inflates it back to the original bytes", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(TWO_PARTS);
      const { answer, stored } = await declareMultipart(token, bytes, "gzip");
      expect(answer.partCount).toBe(2);
      for (const part of answer.parts) await putPart(answer, stored, part.partNumber);
      const done = await complete(client, token, answer.uploadId);
      expect(done.status).toBe(201);
      const { fileId } = (await done.json()) as { fileId: string };
      const content = await client.call("GET", `/v1/files/${fileId}/content`, { token });
      expect(content.status).toBe(200);
      expect(await sha256Hex(await content.arrayBuffer())).toBe(await sha256Hex(bytes));
    });

    it("says which parts are missing, resumes with fresh URLs for those only, then completes", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(TWO_PARTS);
      const { answer, stored } = await declareMultipart(token, bytes);
      await putPart(answer, stored, 1);

      const early = await complete(client, token, answer.uploadId);
      expect(await errorOf(early)).toEqual({
        status: 409,
        code: "upload_incomplete",
        message: "1 of 2 parts are not stored yet (part 2)",
      });

      const state = (await (await stateOf(token, answer.uploadId)).json()) as UploadState;
      expect(state.status).toBe("multipart");
      if (state.status !== "multipart") return;
      expect(state.parts.map((p) => p.partNumber)).toEqual([2]);
      await putPart(state, stored, 2);
      const done = await complete(client, token, answer.uploadId);
      expect(done.status).toBe(201);
      const { fileId } = (await done.json()) as { fileId: string };

      const after = (await (await stateOf(token, answer.uploadId)).json()) as UploadState;
      expect(after.status).toBe("completed");
      if (after.status === "completed") expect(after.file.fileId).toBe(fileId);
      const again = await complete(client, token, answer.uploadId);
      expect(((await again.json()) as { fileId: string }).fileId).toBe(fileId);
    });

    it("refuses a part with other bytes than declared and still counts it as missing", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(TWO_PARTS);
      const { answer } = await declareMultipart(token, bytes);
      const part = answer.parts[0];
      if (!part) throw new Error("no part 1");
      const other = randomBytes(answer.partSize);
      const refused = await putBytes(client, part.put, other);
      expect(refused.status).toBe(400);
      const state = (await (await stateOf(token, answer.uploadId)).json()) as MultipartAnswer;
      expect(state.parts.map((p) => p.partNumber)).toEqual([1, 2]);
      expect(await store.head(`${blobKey(await sha256Hex(bytes))}.${answer.uploadId}`)).toBeNull();
    });

    it("never lets a multipart upload that lied about its hash become content", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(TWO_PARTS);
      const claimed = await sha256Hex(randomBytes(64));
      const { answer, stored } = await declareMultipart(token, bytes, "identity", {
        sha256: claimed,
        storedSha256: claimed,
      });
      for (const part of answer.parts) await putPart(answer, stored, part.partNumber);
      const done = await complete(client, token, answer.uploadId);
      expect(done.status).toBe(201); // accepted; the read-back (waited for) finds the lie
      const { fileId } = (await done.json()) as { fileId: string };

      const content = await client.call("GET", `/v1/files/${fileId}/content`, { token });
      expect(content.status).toBeGreaterThanOrEqual(404);
      expect(await store.head(`${blobKey(claimed)}.${answer.uploadId}`)).toBeNull();
      expect(await store.head(blobKey(claimed))).toBeNull();
      const other = await client.mintSession();
      const probe = await declare(client, other.token, {
        name: "x.bin",
        size: bytes.byteLength,
        sha256: claimed,
      });
      expect(((await probe.json()) as { status: string }).status).toBe("missing");
    });

    it("refuses part lists that do not match the declared bytes", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(TWO_PARTS);
      const { declared } = await describeBytes(bytes, "w.bin");
      const digest = await sha256Hex(bytes);
      const cases: [unknown, string][] = [
        [{ ...declared, partSha256: [digest] }, "partSha256 must list 2 digests"],
        [{ ...declared, partSha256: [digest, "nothex"] }, "partSha256"],
        [{ ...declared, partSha256: [] }, "partSha256"],
        [
          { name: "w.bin", size: declared.size, sha256: digest, partSha256: [digest, digest] },
          "partSha256 goes with encoding, storedSize and storedSha256",
        ],
      ];
      for (const [body, message] of cases) {
        const error = await errorOf(await declare(client, token, body));
        expect(error.status).toBe(400);
        expect(error.message).toContain(message);
      }
    });

    it("gives up a stale multipart upload: the sweep aborts it at the store", async () => {
      const { token, sessionId } = await client.mintSession();
      const bytes = randomBytes(TWO_PARTS);
      const { answer, stored } = await declareMultipart(token, bytes);
      await putPart(answer, stored, 1);
      const session = await findSession(backend.env.DB, sessionId);
      if (!session) throw new Error("no session");

      const later = Date.parse(answer.expiresAt) + STALE_UPLOAD_GRACE_MS + 1000;
      const tooOld = uploadState(depsAt(later), session, answer.uploadId, ORIGIN);
      await expect(tooOld).rejects.toMatchObject({ code: "upload_expired" });
      expect(later).toBeGreaterThan(Date.now() + RESUME_WINDOW_MS);

      const result = await sweep(depsAt(later));
      expect(result.uploadsExpired).toBeGreaterThanOrEqual(1);
      const target = {
        uploadId: answer.uploadId,
        storeUploadId: await storeUploadIdOf(answer.uploadId),
        key: `${blobKey(await sha256Hex(bytes))}.${answer.uploadId}`,
      };
      if (backend.name === "s3") {
        await expect(store.listParts(target)).rejects.toBeInstanceOf(MultipartUploadGoneError);
      } else {
        expect(await store.listParts(target)).toEqual([]);
      }
      expect(await errorOf(await stateOf(token, answer.uploadId))).toMatchObject({
        status: 409,
        code: "upload_rejected",
      });
    });

    async function storeUploadIdOf(uploadId: string): Promise<string> {
      const row = await backend.env.DB.prepare("SELECT store_upload_id FROM uploads WHERE id = ?")
        .bind(uploadId)
        .first<{ store_upload_id: string }>();
      return row?.store_upload_id ?? "";
    }

    it("answers the state of another session's upload as not found", async () => {
      const { token } = await client.mintSession();
      const { answer } = await declareMultipart(token, randomBytes(TWO_PARTS));
      const other = await client.mintSession();
      expect(await errorOf(await stateOf(other.token, answer.uploadId))).toMatchObject({
        status: 404,
        code: "upload_not_found",
      });
    });

    if (backend.name === "r2") {
      it("checks a relay part URL's signature, Content-Length and checksum", async () => {
        const { token } = await client.mintSession();
        const bytes = randomBytes(TWO_PARTS);
        const { answer, stored } = await declareMultipart(token, bytes);
        const part = answer.parts[1];
        if (!part) throw new Error("no part 2");
        const body = partBytes(stored, answer.partSize, 2);
        const moved = { ...part.put, url: part.put.url.replace("/parts/2?", "/parts/1?") };
        expect((await errorOf(await putBytes(client, moved, body))).code).toBe("forbidden");
        const short = await putBytes(client, part.put, body.subarray(1), {
          "content-length": String(body.byteLength - 1),
        });
        expect((await errorOf(short)).code).toBe("length_mismatch");
        const wrongSum = await putBytes(client, part.put, body, {
          "x-amz-checksum-sha256": btoa("x".repeat(32)),
        });
        expect((await errorOf(wrongSum)).code).toBe("checksum_mismatch");
        const state = (await (await stateOf(token, answer.uploadId)).json()) as MultipartAnswer;
        expect(state.parts).toHaveLength(2);
      });
    }
  });
}
