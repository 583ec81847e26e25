import { describe, expect, it } from "vitest";
import { findUpload } from "../../src/db/uploads";
import { backends } from "../support/backends";
import { expectPartsGone, putSignedParts } from "../support/deferred-parts";
import { randomBytes, sha256Hex } from "../support/bytes";
import { errorOf, RelayClient } from "../support/relay-client";
import { declare, partBytes, type MultipartAnswer } from "../support/send";

const MiB = 1024 * 1024;

/** Uploads declared without their hashes: parts signed one by one, the SHA-256 at complete. */
for (const backend of backends()) {
  describe(`hash at complete on ${backend.name}`, () => {
    const client = new RelayClient(backend.env);

    /** Declares `bytes` without hashes, then signs and PUTs every part; the declare's answer. */
    async function sendParts(token: string, bytes: Uint8Array): Promise<MultipartAnswer> {
      const size = bytes.byteLength;
      const response = await declare(client, token, { name: "w.bin", size, hashAtComplete: true });
      expect(response.status).toBe(201);
      const answer = (await response.json()) as MultipartAnswer;
      expect(answer.parts).toEqual([]);
      const numbers = Array.from({ length: answer.partCount }, (_, i) => i + 1);
      expect(answer.missing).toEqual(numbers);
      const parts = await Promise.all(
        numbers.map(async (partNumber) => ({
          partNumber,
          sha256: await sha256Hex(partBytes(bytes, answer.partSize, partNumber)),
        })),
      );
      await putSignedParts(client, token, answer.uploadId, parts, bytes, answer.partSize);
      return answer;
    }

    function complete(token: string, uploadId: string, sha256?: string): Promise<Response> {
      const json = sha256 === undefined ? undefined : { sha256 };
      return client.call("POST", `/v1/uploads/${uploadId}/complete`, { token, json });
    }

    const partsGone = (answer: MultipartAnswer) => expectPartsGone(backend, answer.uploadId);

    it("stores the bytes, verifies the SHA-256 given at complete and serves them byte-exact", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(8 * MiB + 4096);
      const answer = await sendParts(token, bytes);
      expect(answer.partCount).toBe(2);
      const missingHash = await complete(token, answer.uploadId);
      expect(await errorOf(missingHash)).toEqual({
        status: 400,
        code: "invalid_request",
        message: "this upload was declared without its sha256: complete must carry it ({ sha256 })",
      });
      const done = await complete(token, answer.uploadId, await sha256Hex(bytes));
      expect(done.status).toBe(201);
      const file = (await done.json()) as { fileId: string; sha256: string; deduped: boolean };
      expect(file.deduped).toBe(false);
      const content = await client.call("GET", `/v1/files/${file.fileId}/content`, { token });
      expect(await sha256Hex(await content.arrayBuffer())).toBe(await sha256Hex(bytes));
    });

    it("refuses a lying SHA-256 at complete: 422, no file, nothing left in the store", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(MiB);
      const answer = await sendParts(token, bytes);
      const lie = await complete(token, answer.uploadId, "a".repeat(64));
      expect(await errorOf(lie)).toEqual({
        status: 422,
        code: "content_mismatch",
        message:
          "the stored bytes are not the declared content (size or SHA-256); nothing was kept",
      });
      const files = await client.call("GET", "/v1/files", { token });
      expect(((await files.json()) as { files: unknown[] }).files).toEqual([]);
      await partsGone(answer);
      expect((await findUpload(backend.env.DB, answer.uploadId))?.status).toBe("rejected");
    });

    it("finds a dedup hit at complete within the owner scope only, and drops the new parts", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(MiB);
      const sha256 = await sha256Hex(bytes);
      const first = await sendParts(token, bytes);
      expect((await complete(token, first.uploadId, sha256)).status).toBe(201);

      const again = await sendParts(token, bytes);
      const hit = await complete(token, again.uploadId, sha256);
      expect(hit.status).toBe(201);
      expect(((await hit.json()) as { deduped: boolean }).deduped).toBe(true);
      await partsGone(again);

      // Another scope sending the same bytes learns nothing: its upload is stored as its own.
      const stranger = await client.mintSession();
      const theirs = await sendParts(stranger.token, bytes);
      const own = await complete(stranger.token, theirs.uploadId, sha256);
      expect(own.status).toBe(201);
      expect(((await own.json()) as { deduped: boolean }).deduped).toBe(false);
    });
  });
}
