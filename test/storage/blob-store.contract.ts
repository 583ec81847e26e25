import { describe, expect, it } from "vitest";
import { hexToBase64 } from "../../src/encoding";
import { ContentRejectedError, type BlobStore } from "../../src/storage/blob-store";
import { randomBytes, sha256Hex } from "../support/bytes";

async function text(body: ReadableStream): Promise<Uint8Array> {
  return new Uint8Array(await new Response(body).arrayBuffer());
}

function streamOf(bytes: Uint8Array): ReadableStream {
  return new Blob([bytes]).stream();
}

/** The behaviour every BlobStore must have, run against each real backend. */
export function blobStoreContract(name: string, makeStore: () => BlobStore): void {
  describe(`BlobStore contract: ${name}`, () => {
    const key = () => `contract/${crypto.randomUUID()}`;

    it("stores verified bytes and reads them back whole and by range", async () => {
      const store = makeStore();
      const bytes = randomBytes(100_003);
      const k = key();
      await store.put(k, streamOf(bytes), {
        size: bytes.byteLength,
        sha256Hex: await sha256Hex(bytes),
      });
      expect(await store.head(k)).toEqual({ size: bytes.byteLength });
      const whole = await store.get(k);
      expect(whole?.size).toBe(bytes.byteLength);
      expect(await sha256Hex(await text(whole!.body))).toBe(await sha256Hex(bytes));
      const part = await store.get(k, { offset: 99_000, length: 1003 });
      expect(await text(part!.body)).toEqual(bytes.subarray(99_000));
    });

    it("refuses a body whose SHA-256 differs and leaves nothing at the key", async () => {
      const store = makeStore();
      const k = key();
      const bytes = randomBytes(5000);
      const wrong = await sha256Hex(randomBytes(5000));
      await expect(
        store.put(k, streamOf(bytes), { size: 5000, sha256Hex: wrong }),
      ).rejects.toBeInstanceOf(ContentRejectedError);
      expect(await store.head(k)).toBeNull();
    });

    it("stores an empty object", async () => {
      const store = makeStore();
      const k = key();
      const empty = new Uint8Array(0);
      await store.put(k, empty, { size: 0, sha256Hex: await sha256Hex(empty) });
      expect(await store.head(k)).toEqual({ size: 0 });
    });

    it("answers null for a missing key and deletes idempotently", async () => {
      const store = makeStore();
      const k = key();
      expect(await store.head(k)).toBeNull();
      expect(await store.get(k)).toBeNull();
      await store.delete(k);
      const bytes = randomBytes(10);
      await store.put(k, bytes, { size: 10, sha256Hex: await sha256Hex(bytes) });
      await store.delete(k);
      expect(await store.head(k)).toBeNull();
    });

    it("writes an object again with the same bytes, its write time moved on; a missing one is false", async () => {
      const store = makeStore();
      const bytes = randomBytes(90_001);
      const k = key();
      const sha256 = await sha256Hex(bytes);
      const before = Date.now();
      await store.put(k, streamOf(bytes), { size: bytes.byteLength, sha256Hex: sha256 });
      const written = await store.writtenAt(k);
      // S3's Last-Modified has whole seconds.
      expect(written).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
      expect(written).toBeLessThanOrEqual(Date.now());
      await new Promise((resolve) => setTimeout(resolve, 1100));

      expect(await store.rewrite(k)).toBe(true);
      expect(await store.writtenAt(k)).toBeGreaterThan(written!);
      expect(await store.head(k)).toEqual({ size: bytes.byteLength });
      const again = await store.get(k);
      expect(await sha256Hex(await text(again!.body))).toBe(sha256);

      const missing = key();
      expect(await store.writtenAt(missing)).toBeNull();
      expect(await store.rewrite(missing)).toBe(false);
      expect(await store.head(missing)).toBeNull();
    });

    if (makeStore().copy) {
      it("copies an object inside the store, the source kept; a missing source is an error", async () => {
        const store = makeStore();
        const bytes = randomBytes(70_001);
        const [from, to] = [key(), key()];
        await store.put(from, bytes, { size: bytes.byteLength, sha256Hex: await sha256Hex(bytes) });
        await store.copy!(from, to);
        const copied = await store.get(to);
        expect(await sha256Hex(await text(copied!.body))).toBe(await sha256Hex(bytes));
        expect(await store.head(from)).toEqual({ size: bytes.byteLength });
        await expect(store.copy!(key(), key())).rejects.toThrow(/copy of .* failed/);
      });
    }

    it("signs upload instructions that bind the length and the checksum", async () => {
      const store = makeStore();
      const bytes = randomBytes(2048);
      const sha = await sha256Hex(bytes);
      const put = await store.createUploadUrl({
        key: key(),
        uploadId: "upl_AAAAAAAAAAAAAAAAAAAAAA",
        size: 2048,
        sha256Hex: sha,
        contentType: "application/octet-stream",
        expiresAt: Date.now() + 60_000,
        relayOrigin: "http://relay.test",
      });
      expect(put.method).toBe("PUT");
      expect(put.headers).toMatchObject({
        "content-length": "2048",
        "x-amz-checksum-sha256": hexToBase64(sha),
      });
    });

    if (makeStore().receiveUpload) {
      it("receives a client body through the relay, verifying it", async () => {
        const store = makeStore();
        const bytes = randomBytes(4096);
        const k = key();
        await expect(
          store.receiveUpload!(k, streamOf(bytes), {
            size: 4096,
            sha256Hex: await sha256Hex(randomBytes(1)),
          }),
        ).rejects.toBeInstanceOf(ContentRejectedError);
        expect(await store.head(k)).toBeNull();
        await store.receiveUpload!(k, streamOf(bytes), {
          size: 4096,
          sha256Hex: await sha256Hex(bytes),
        });
        expect(await store.head(k)).toEqual({ size: 4096 });
      });
    } else {
      it("gives a URL the store itself holds to the signed length and checksum", async () => {
        const store = makeStore();
        const bytes = randomBytes(4096);
        const k = key();
        const put = await store.createUploadUrl({
          key: k,
          uploadId: "upl_AAAAAAAAAAAAAAAAAAAAAA",
          size: 4096,
          sha256Hex: await sha256Hex(bytes),
          contentType: "application/octet-stream",
          expiresAt: Date.now() + 60_000,
          relayOrigin: "http://relay.test",
        });
        const other = randomBytes(4096);
        expect(
          (await fetch(put.url, { method: "PUT", headers: put.headers, body: other })).status,
        ).toBe(400);
        expect(await store.head(k)).toBeNull();
        const withoutChecksum = { ...put.headers };
        delete withoutChecksum["x-amz-checksum-sha256"];
        expect(
          (await fetch(put.url, { method: "PUT", headers: withoutChecksum, body: other })).status,
        ).toBe(403);
        expect(
          (await fetch(put.url, { method: "PUT", headers: put.headers, body: bytes })).status,
        ).toBe(200);
        expect(await store.head(k)).toEqual({ size: 4096 });
      });
    }
  });
}
