import { describe, expect, it } from "vitest";
import { findUpload } from "../../src/db/uploads";
import { maxStoredSize, partCount, partSizeFor } from "../../src/part-plan";
import { backends } from "../support/backends";
import { expectPartsGone, putSignedParts } from "../support/deferred-parts";
import { sha256Hex } from "../support/bytes";
import { countingText, gzipMembers } from "../support/gzip-members";
import { errorOf, RelayClient } from "../support/relay-client";
import { declare, partBytes, type MultipartAnswer } from "../support/send";

const MiB = 1024 * 1024;

/**
 * gzip sent from its first byte (docs/api.md, "gzip with the hash at complete"): declared
 * without any hash or stored size, each part signed with its digest and its length, and the
 * SHA-256, stored form and member table given at complete, then verified by the read-back.
 */
for (const backend of backends()) {
  describe(`gzip with the hash at complete on ${backend.name}`, () => {
    const client = new RelayClient(backend.env);

    /** Declares gzip of `size` bytes without hashes, then signs and PUTs `stored` in parts. */
    async function sendParts(token: string, size: number, stored: Uint8Array) {
      const body = { name: "log.txt", size, encoding: "gzip", hashAtComplete: true };
      const response = await declare(client, token, body);
      expect(response.status).toBe(201);
      const answer = (await response.json()) as MultipartAnswer;
      expect(answer.partSize).toBe(partSizeFor(size));
      // Planned within the largest gzip of the file: the stored size is not known yet.
      expect(answer.partCount).toBe(partCount(maxStoredSize(size), answer.partSize));
      const count = partCount(stored.byteLength, answer.partSize);
      const parts = await Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const bytes = partBytes(stored, answer.partSize, i + 1);
          return { partNumber: i + 1, sha256: await sha256Hex(bytes), size: bytes.byteLength };
        }),
      );
      const path = `/v1/uploads/${answer.uploadId}/parts`;
      const unsized = await client.call("POST", path, {
        token,
        json: { parts: [{ partNumber: 1, sha256: parts[0]!.sha256 }] },
      });
      expect(await errorOf(unsized)).toEqual({
        status: 400,
        code: "invalid_request",
        message:
          "the parts of a gzip upload declared without its stored size carry their size ({ partNumber, sha256, size })",
      });
      await putSignedParts(client, token, answer.uploadId, parts, stored, answer.partSize);
      return answer;
    }

    const complete = (token: string, uploadId: string, json: unknown) =>
      client.call("POST", `/v1/uploads/${uploadId}/complete`, { token, json });

    it("takes the stored form and member table at complete, verifies them, and serves the bytes", async () => {
      const { token } = await client.mintSession();
      const text = countingText(3 * MiB + 777);
      const { stored, declared } = await gzipMembers(text);
      const answer = await sendParts(token, text.byteLength, stored);
      const noStoredForm = await complete(token, answer.uploadId, { sha256: declared.sha256 });
      expect(await errorOf(noStoredForm)).toEqual({
        status: 400,
        code: "invalid_request",
        message:
          "this gzip upload was declared without its stored form: complete must carry sha256, storedSize and storedSha256 (and members)",
      });
      const { sha256, storedSize, storedSha256, members } = declared;
      const done = await complete(token, answer.uploadId, {
        sha256,
        storedSize,
        storedSha256,
        members,
      });
      expect(done.status, await done.clone().text()).toBe(201);
      const file = (await done.json()) as { fileId: string; status: string; sha256: string };
      expect(file).toMatchObject({ status: "verified", sha256 });
      const content = await client.call("GET", `/v1/files/${file.fileId}/content`, { token });
      expect(await sha256Hex(await content.arrayBuffer())).toBe(sha256);
      // The verified table serves a range by its members alone.
      const range = await client.call("GET", `/v1/files/${file.fileId}/content`, {
        token,
        headers: { range: `bytes=${2 * MiB}-${2 * MiB + 9}` },
      });
      expect(range.status).toBe(206);
      expect(new Uint8Array(await range.arrayBuffer())).toEqual(
        text.subarray(2 * MiB, 2 * MiB + 10),
      );
    });

    it("refuses a lying member table at complete: 422, no file, no parts, no object", async () => {
      const { token } = await client.mintSession();
      const text = countingText(3 * MiB);
      const { stored, declared } = await gzipMembers(text);
      const answer = await sendParts(token, text.byteLength, stored);
      // The right bytes and the right total; the first boundary one byte off.
      const [a, b, c] = declared.members.storedSizes as [number, number, number];
      const members = { span: declared.members.span, storedSizes: [a + 1, b - 1, c] };
      const { sha256, storedSize, storedSha256 } = declared;
      const lie = await complete(token, answer.uploadId, {
        sha256,
        storedSize,
        storedSha256,
        members,
      });
      expect(await errorOf(lie)).toEqual({
        status: 422,
        code: "content_mismatch",
        message:
          "the stored bytes are not the declared content (size or SHA-256); nothing was kept",
      });
      const files = await client.call("GET", "/v1/files", { token });
      expect(((await files.json()) as { files: unknown[] }).files).toEqual([]);
      const upload = await findUpload(backend.env.DB, answer.uploadId);
      expect(upload?.status).toBe("rejected");
      await expectPartsGone(backend, answer.uploadId);
    });
  });
}
