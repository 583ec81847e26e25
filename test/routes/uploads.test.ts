import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { INLINE_VERIFY_MAX_BYTES } from "../../src/services/uploads/queued-join";
import { createBlobStore, uploadKey } from "../../src/storage";
import { backends } from "../support/backends";
import { gzip, logText, randomBytes, sha256Hex } from "../support/bytes";
import { errorOf, RelayClient } from "../support/relay-client";
import {
  complete,
  declare,
  describe as describeBytes,
  putBytes,
  upload,
  type Declared,
  type UploadAnswer,
} from "../support/send";

async function contentOf(client: RelayClient, url: string): Promise<Uint8Array> {
  const response = await client.fetch(url);
  expect(response.status).toBe(200);
  return new Uint8Array(await response.arrayBuffer());
}

for (const backend of backends()) {
  describe(`send path on ${backend.name}`, () => {
    const client = new RelayClient(backend.env);
    const store = createBlobStore(readConfig(backend.env), backend.env);

    it.each([
      ["random binary", randomBytes(1024 * 1024 + 7), "identity"],
      ["log text, gzipped", logText(20_000), "gzip"],
      ["an empty file", new Uint8Array(0), "identity"],
    ] as const)(
      "round-trips %s byte-exact through the share link and the content route",
      async (_, bytes, encoding) => {
        const { token } = await client.mintSession();
        const file = await upload(client, token, bytes, "data.bin", encoding);
        expect(file.size).toBe(bytes.byteLength);
        expect(file.sha256).toBe(await sha256Hex(bytes));
        expect(await sha256Hex(await contentOf(client, file.url))).toBe(file.sha256);
        const content = await client.call("GET", `/v1/files/${file.fileId}/content`, { token });
        expect(content.headers.get("content-length")).toBe(String(bytes.byteLength));
        expect(await sha256Hex(await content.arrayBuffer())).toBe(file.sha256);
      },
    );

    it("dedups a re-send within the owner scope: the probe alone returns a file, 0 bytes uploaded", async () => {
      const bytes = randomBytes(300_000);
      const first = await client.mintSession({ owner: "user-dedup-1" });
      await upload(client, first.token, bytes, "a.bin");
      for (const { token } of [first, await client.mintSession({ owner: "user-dedup-1" })]) {
        const probe = await declare(client, token, {
          name: "b.bin",
          size: bytes.byteLength,
          sha256: await sha256Hex(bytes),
        });
        expect(probe.status).toBe(201);
        const answer = (await probe.json()) as UploadAnswer;
        expect(answer.status).toBe("deduped");
        if (answer.status !== "deduped") return;
        expect(answer.file.name).toBe("b.bin");
        expect(answer.file.deduped).toBe(true);
        expect(await sha256Hex(await contentOf(client, answer.file.url))).toBe(
          await sha256Hex(bytes),
        );
      }
    });

    it("never dedups across scopes: another session's probe is missing, its bytes travel and are stored once", async () => {
      const bytes = randomBytes(300_000);
      const owner = await client.mintSession();
      const sent = await upload(client, owner.token, bytes, "a.bin");
      const other = await client.mintSession({ owner: "someone-else" });
      const probe = await declare(client, other.token, {
        name: "b.bin",
        size: bytes.byteLength,
        sha256: sent.sha256,
      });
      expect(probe.status).toBe(200);
      expect(await probe.json()).toEqual({ status: "missing" });
      const again = await upload(client, other.token, bytes, "b.bin");
      expect(again.uploadedBytes).toBe(bytes.byteLength);
      expect(again.deduped).toBe(false);
      expect(await sha256Hex(await contentOf(client, again.url))).toBe(sent.sha256);
      // The store keeps one copy: the second upload's own object was dropped for the first's.
      expect(await store.head(uploadKey(sent.sha256, again.uploadId))).toBeNull();
    });

    it("answers a probe for unknown content with status missing", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(1000);
      const response = await declare(client, token, {
        name: "x",
        size: 1000,
        sha256: await sha256Hex(bytes),
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: "missing" });
    });

    /**
     * Uploads gzip bytes that do not inflate to what was declared, then checks the lie
     * cost nothing: the relay deletes the file once it has inflated the bytes, keeps no
     * object and never answers a probe for the declared hash with those bytes.
     */
    async function expectLieRefused(declared: Declared, stored: Uint8Array): Promise<void> {
      const { token } = await client.mintSession();
      const answer = (await (await declare(client, token, declared)).json()) as UploadAnswer;
      if (answer.status !== "upload") throw new Error("expected upload instructions");
      expect((await putBytes(client, answer.put, stored)).ok).toBe(true);
      // Small enough to be read back in the request: the lie is refused at once.
      expect(await errorOf(await complete(client, token, answer.uploadId))).toMatchObject({
        status: 422,
        code: "content_mismatch",
      });
      expect(await store.head(uploadKey(declared.storedSha256, answer.uploadId))).toBeNull();
      for (const { token: asker } of [{ token }, await client.mintSession()]) {
        const probe = await declare(client, asker, {
          name: "v",
          size: declared.size,
          sha256: declared.sha256,
        });
        expect(await probe.json()).toEqual({ status: "missing" });
      }
      expect(await errorOf(await complete(client, token, answer.uploadId))).toMatchObject({
        status: 409,
        code: "upload_rejected",
      });
    }

    it("deletes gzip bytes that do not inflate to the declared hash, keeps nothing and never dedups to them", async () => {
      const victim = logText(5000);
      const { declared: honest } = await describeBytes(victim, "victim.log", "gzip");
      const evil = await gzip(logText(4000));
      await expectLieRefused(
        { ...honest, storedSize: evil.byteLength, storedSha256: await sha256Hex(evil) },
        evil,
      );
    });

    it("deletes gzip that inflates past the declared size (a decompression bomb)", async () => {
      const bomb = await gzip(new Uint8Array(5_000_000));
      await expectLieRefused(
        {
          name: "small.txt",
          size: 100_000,
          sha256: await sha256Hex(new Uint8Array(100_000)),
          encoding: "gzip",
          storedSize: bomb.byteLength,
          storedSha256: await sha256Hex(bomb),
        },
        bomb,
      );
    });

    it("keeps a large gzip upload pending until the verify queue checked it: no dedup, no hash shown", async () => {
      // Past INLINE_VERIFY_MAX_BYTES of stored bytes: checked on the queue, not in `complete`.
      const bytes = randomBytes(INLINE_VERIFY_MAX_BYTES + 4096);
      const { token } = await client.mintSession();
      client.holdVerification();
      try {
        const sent = await upload(client, token, bytes, "a.bin", "gzip");
        expect(sent.status).toBe("pending");
        expect(client.queued).toEqual([{ uploadId: sent.uploadId, fileId: sent.fileId }]);
        const probe = () =>
          declare(client, token, { name: "b.bin", size: bytes.byteLength, sha256: sent.sha256 });
        expect(await (await probe()).json()).toEqual({ status: "missing" });
        const shared = await client.fetch(sent.url);
        expect(shared.headers.get("etag")).toBeNull();
        expect(await sha256Hex(await shared.arrayBuffer())).toBe(sent.sha256);
        await client.runQueued();
        const file = await client.call("GET", `/v1/files/${sent.fileId}`, { token });
        expect(await file.json()).toMatchObject({ status: "verified", sha256: sent.sha256 });
        expect(await (await probe()).json()).toMatchObject({ status: "deduped" });
      } finally {
        client.resumeVerification();
      }
    });

    it("leaves a small gzip that inflates past INLINE_VERIFY_MAX_BYTES to the queue: complete inflates nothing", async () => {
      // 16 KiB of gzip that declares (honestly) 8 MiB of zeros: the request's cost must follow
      // what it stores, so the inflating check runs on the queue.
      const bytes = new Uint8Array(2 * INLINE_VERIFY_MAX_BYTES);
      const { token } = await client.mintSession();
      client.holdVerification();
      try {
        const sent = await upload(client, token, bytes, "zeros.bin", "gzip");
        expect(sent.uploadedBytes).toBeLessThan(64 * 1024);
        expect(sent.status).toBe("pending");
        await client.runQueued();
        const file = await client.call("GET", `/v1/files/${sent.fileId}`, { token });
        expect(await file.json()).toMatchObject({ status: "verified", sha256: sent.sha256 });
      } finally {
        client.resumeVerification();
      }
    });

    it("refuses a PUT of other bytes than declared and stores nothing", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(4096);
      const { declared } = await describeBytes(bytes, "a.bin");
      const answer = (await (await declare(client, token, declared)).json()) as UploadAnswer;
      if (answer.status !== "upload") throw new Error("expected upload instructions");
      const other = randomBytes(4096);
      const put = await putBytes(client, answer.put, other);
      expect(put.status).toBe(400);
      expect(await store.head(uploadKey(declared.storedSha256, answer.uploadId))).toBeNull();
      expect(await errorOf(await complete(client, token, answer.uploadId))).toMatchObject({
        status: 409,
        code: "upload_not_uploaded",
      });
    });

    it("refuses a complete before any upload with 409 upload_not_uploaded", async () => {
      const { token } = await client.mintSession();
      const { declared } = await describeBytes(randomBytes(100), "a.bin");
      const answer = (await (await declare(client, token, declared)).json()) as UploadAnswer;
      if (answer.status !== "upload") throw new Error("expected upload instructions");
      expect(await errorOf(await complete(client, token, answer.uploadId))).toMatchObject({
        status: 409,
        code: "upload_not_uploaded",
      });
    });

    it("completing twice returns the same file", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(2000);
      const { declared, stored } = await describeBytes(bytes, "twice.bin");
      const answer = (await (await declare(client, token, declared)).json()) as UploadAnswer;
      if (answer.status !== "upload") throw new Error("expected upload instructions");
      await putBytes(client, answer.put, stored);
      const first = (await (await complete(client, token, answer.uploadId)).json()) as {
        fileId: string;
      };
      const second = await complete(client, token, answer.uploadId);
      expect(second.status).toBe(201);
      expect(((await second.json()) as { fileId: string }).fileId).toBe(first.fileId);
    });

    it("returns 413 quota_exceeded before any byte is uploaded when the file does not fit", async () => {
      const { token } = await client.mintSession({ quotaBytes: 10_000 });
      await upload(client, token, randomBytes(6000), "first.bin");
      const { declared } = await describeBytes(randomBytes(6000), "second.bin");
      const probe = await declare(client, token, {
        name: declared.name,
        size: declared.size,
        sha256: declared.sha256,
      });
      expect(await errorOf(probe)).toMatchObject({ status: 413, code: "quota_exceeded" });
      const refused = await declare(client, token, declared);
      expect(await errorOf(refused)).toMatchObject({ status: 413, code: "quota_exceeded" });
      const uploads = await backend.env.DB.prepare(
        "SELECT COUNT(*) AS n FROM uploads WHERE sha256 = ?",
      )
        .bind(declared.sha256)
        .first<{ n: number }>();
      expect(uploads?.n).toBe(0);
    });
  });
}
