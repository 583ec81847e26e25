import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { blobKey, createBlobStore } from "../../src/storage";
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

    it("dedups a re-send: the probe alone returns a file, 0 bytes uploaded", async () => {
      const bytes = randomBytes(300_000);
      const first = await client.mintSession();
      await upload(client, first.token, bytes, "a.bin");
      const second = await client.mintSession();
      const probe = await declare(client, second.token, {
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
      const completed = await complete(client, token, answer.uploadId);
      expect(completed.status).toBe(201);
      const file = (await completed.json()) as { fileId: string; url: string };
      // The relay client waits for the background check, as the runtime would finish it.
      expect(
        await errorOf(await client.call("GET", `/v1/files/${file.fileId}`, { token })),
      ).toMatchObject({
        status: 404,
        code: "file_not_found",
      });
      expect((await client.fetch(file.url)).status).toBe(404);
      expect(await store.head(blobKey(declared.storedSha256))).toBeNull();
      const other = await client.mintSession();
      const probe = await declare(client, other.token, {
        name: "v",
        size: declared.size,
        sha256: declared.sha256,
      });
      expect(await probe.json()).toEqual({ status: "missing" });
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

    it("makes gzip content a dedup target only once the relay has checked it", async () => {
      const text = logText(2000);
      const first = await client.mintSession();
      const sent = await upload(client, first.token, text, "a.log", "gzip");
      expect(sent.uploadedBytes).toBeLessThan(text.byteLength / 3);
      const second = await client.mintSession();
      const probe = await declare(client, second.token, {
        name: "b.log",
        size: text.byteLength,
        sha256: sent.sha256,
      });
      expect(await probe.json()).toMatchObject({ status: "deduped" });
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
      expect(await store.head(blobKey(declared.storedSha256))).toBeNull();
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
      expect(await store.head(blobKey(declared.storedSha256))).toBeNull();
    });
  });
}
