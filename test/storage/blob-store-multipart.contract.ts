import { describe, expect, it } from "vitest";
import {
  ContentRejectedError,
  MultipartUploadGoneError,
  type BlobStore,
  type ExpectedPart,
  type MultipartTarget,
} from "../../src/storage/blob-store";
import { randomBytes, sha256Hex } from "../support/bytes";

/** S3's (and R2's) smallest part but the last. */
const MIN_PART = 5 * 1024 * 1024;

async function bytesOf(body: ReadableStream): Promise<Uint8Array> {
  return new Uint8Array(await new Response(body).arrayBuffer());
}

async function expectedPart(partNumber: number, bytes: Uint8Array): Promise<ExpectedPart> {
  return { partNumber, size: bytes.byteLength, sha256Hex: await sha256Hex(bytes) };
}

/**
 * Sends `body` as part `part` the way the store takes parts: streamed through the relay
 * (`receivePart`) or PUT by the client to the store's signed URL. Resolves to the refusal, if any:
 * the error the store threw, or the status the URL answered.
 */
async function sendPart(
  store: BlobStore,
  target: MultipartTarget,
  part: ExpectedPart,
  body: Uint8Array,
): Promise<unknown> {
  if (store.receivePart) {
    return store.receivePart(target, part, new Blob([body]).stream()).then(
      () => null,
      (error: unknown) => error,
    );
  }
  const put = await store.createPartUploadUrl({
    ...part,
    target,
    expiresAt: Date.now() + 60_000,
    relayOrigin: "http://relay.test",
  });
  const answer = await fetch(put.url, { method: put.method, headers: put.headers, body });
  await answer.body?.cancel();
  return answer.ok ? null : answer.status;
}

/** The multipart methods and presigned downloads of every BlobStore, run against each real backend. */
export function blobStoreMultipartContract(name: string, makeStore: () => BlobStore): void {
  describe(`BlobStore multipart contract: ${name}`, () => {
    const newTarget = async (store: BlobStore): Promise<MultipartTarget> => {
      const key = `contract/${crypto.randomUUID()}`;
      const uploadId = `upl_${crypto.randomUUID().replace(/-/g, "").slice(0, 22)}`;
      return { uploadId, key, storeUploadId: await store.createMultipartUpload(key) };
    };

    it("assembles checksummed parts into the object, refusing a part whose bytes differ", async () => {
      const store = makeStore();
      const target = await newTarget(store);
      const [one, two] = [randomBytes(MIN_PART), randomBytes(1001)];
      const parts = [await expectedPart(1, one), await expectedPart(2, two)];

      // A body that is not the declared part is refused and leaves the part missing.
      expect(await sendPart(store, target, parts[1]!, randomBytes(1001))).toSatisfy(
        (refusal) => refusal instanceof ContentRejectedError || refusal === 400,
      );
      expect(await store.listParts(target)).toEqual([]);

      expect(await sendPart(store, target, parts[1]!, two)).toBeNull();
      expect(await sendPart(store, target, parts[0]!, one)).toBeNull();
      const listed = await store.listParts(target);
      expect(listed.map(({ partNumber, size }) => ({ partNumber, size }))).toEqual([
        { partNumber: 1, size: MIN_PART },
        { partNumber: 2, size: 1001 },
      ]);
      // A store that reports part checksums reports the verified ones.
      listed.forEach((part, i) => {
        if (part.sha256Hex !== undefined) expect(part.sha256Hex).toBe(parts[i]!.sha256Hex);
      });

      await store.completeMultipartUpload(target, listed);
      const whole = await store.get(target.key);
      expect(whole?.size).toBe(MIN_PART + 1001);
      const joined = new Uint8Array(MIN_PART + 1001);
      joined.set(one);
      joined.set(two, MIN_PART);
      expect(await sha256Hex(await bytesOf(whole!.body))).toBe(await sha256Hex(joined));
      await store.delete(target.key);
    });

    it("aborts an upload: nothing is stored, it cannot be completed, and aborting again is no error", async () => {
      const store = makeStore();
      const target = await newTarget(store);
      const bytes = randomBytes(2000);
      const part = await expectedPart(1, bytes);
      expect(await sendPart(store, target, part, bytes)).toBeNull();
      const listed = await store.listParts(target);
      expect(listed).toHaveLength(1);

      await store.abortMultipartUpload(target);
      await expect(store.completeMultipartUpload(target, listed)).rejects.toBeInstanceOf(
        MultipartUploadGoneError,
      );
      await store.abortMultipartUpload(target);
      expect(await store.head(target.key)).toBeNull();
      // R2's parts are listed from the relay's ledger, which the abort emptied; S3 no longer knows it.
      await store.listParts(target).then(
        (left) => expect(left).toEqual([]),
        (error: unknown) => expect(error).toBeInstanceOf(MultipartUploadGoneError),
      );
    });

    if (makeStore().createDownloadUrl) {
      it("presigns a GET with the signed name and type, and a ranged one for that range alone", async () => {
        const store = makeStore();
        const key = `contract/${crypto.randomUUID()}`;
        const bytes = randomBytes(10_000);
        await store.put(key, bytes, { size: 10_000, sha256Hex: await sha256Hex(bytes) });
        const request = {
          expiresAt: Date.now() + 60_000,
          contentDisposition: `attachment; filename="report.csv"`,
          contentType: "text/csv",
        };
        const whole = await fetch(await store.createDownloadUrl!(key, request));
        expect(whole.status).toBe(200);
        expect(whole.headers.get("content-disposition")).toBe(request.contentDisposition);
        expect(whole.headers.get("content-type")).toBe("text/csv");
        expect(await sha256Hex(await whole.arrayBuffer())).toBe(await sha256Hex(bytes));

        const url = await store.createDownloadUrl!(key, { ...request, range: "bytes=9000-" });
        const ranged = await fetch(url, { headers: { range: "bytes=9000-" } });
        expect(ranged.status).toBe(206);
        expect(new Uint8Array(await ranged.arrayBuffer())).toEqual(bytes.subarray(9000));
        const other = await fetch(url, { headers: { range: "bytes=0-" } });
        await other.body?.cancel();
        expect(other.status).toBe(403);
        await store.delete(key);
      });
    }
  });
}
