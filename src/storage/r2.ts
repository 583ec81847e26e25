import type { StoredPart, UploadPartLedger } from "../db/upload-parts";
import { passThroughDigest } from "../content/stream-digest";
import {
  ContentRejectedError,
  MultipartUploadGoneError,
  type BlobStore,
  type ByteRange,
  type ExpectedContent,
  type ExpectedPart,
  type MultipartTarget,
  type PartUrlRequest,
  type PutInstructions,
  type UploadUrlRequest,
  signedPutHeaders,
} from "./blob-store";
import { withKnownLength } from "../content/known-length";

/** Makes the relay's own signed URLs for uploads (and parts of uploads) it will receive. */
export interface RelayUploadUrlSigner {
  upload(origin: string, uploadId: string, expiresAt: number): Promise<string>;
  part(origin: string, uploadId: string, partNumber: number, expiresAt: number): Promise<string>;
}

/**
 * R2 through the Worker binding. Clients cannot reach the binding, so uploads go
 * through the relay (`receiveUpload`, `receivePart`). R2 verifies each single upload's
 * SHA-256 itself; parts it cannot verify, so the relay hashes them on the way in, and
 * keeps the list of parts in D1 because the binding cannot list them.
 */
export class R2BlobStore implements BlobStore {
  readonly kind = "r2";

  constructor(
    private readonly bucket: R2Bucket,
    private readonly signer: RelayUploadUrlSigner,
    private readonly ledger: UploadPartLedger,
  ) {}

  async createUploadUrl(request: UploadUrlRequest): Promise<PutInstructions> {
    return {
      method: "PUT",
      url: await this.signer.upload(request.relayOrigin, request.uploadId, request.expiresAt),
      headers: signedPutHeaders(request.size, request.sha256Hex, request.contentType),
    };
  }

  async createMultipartUpload(key: string): Promise<string> {
    const upload = await this.bucket.createMultipartUpload(key);
    return upload.uploadId;
  }

  async createPartUploadUrl(request: PartUrlRequest): Promise<PutInstructions> {
    const { relayOrigin, target, partNumber, expiresAt } = request;
    return {
      method: "PUT",
      url: await this.signer.part(relayOrigin, target.uploadId, partNumber, expiresAt),
      headers: signedPutHeaders(request.size, request.sha256Hex),
    };
  }

  async receivePart(
    target: MultipartTarget,
    part: ExpectedPart,
    body: ReadableStream,
  ): Promise<void> {
    const upload = this.bucket.resumeMultipartUpload(target.key, target.storeUploadId);
    const { transform, result } = passThroughDigest();
    let uploaded: R2UploadedPart;
    try {
      uploaded = await upload.uploadPart(
        part.partNumber,
        withKnownLength(body.pipeThrough(transform), part.size),
      );
    } catch (error) {
      if (isNoSuchUpload(error)) throw new MultipartUploadGoneError();
      if (/length|size|bytes/i.test(String(error))) {
        throw new ContentRejectedError("length", "body length differs from the declared size");
      }
      throw error;
    }
    const digest = await result;
    if (digest.size !== part.size || digest.sha256Hex !== part.sha256Hex) {
      // R2 now holds these bytes under the part number: the part counts as missing again.
      await this.ledger.forget(target.uploadId, part.partNumber);
      throw new ContentRejectedError("checksum", "body SHA-256 differs from the declared checksum");
    }
    const stored = { partNumber: part.partNumber, size: part.size, etag: uploaded.etag };
    await this.ledger.record(target.uploadId, stored, Date.now());
  }

  listParts(target: MultipartTarget): Promise<StoredPart[]> {
    return this.ledger.list(target.uploadId);
  }

  async completeMultipartUpload(target: MultipartTarget, parts: StoredPart[]): Promise<void> {
    const upload = this.bucket.resumeMultipartUpload(target.key, target.storeUploadId);
    try {
      await upload.complete(parts.map(({ partNumber, etag }) => ({ partNumber, etag })));
    } catch (error) {
      if (isNoSuchUpload(error)) throw new MultipartUploadGoneError();
      throw error;
    }
    await this.ledger.clear(target.uploadId);
  }

  async abortMultipartUpload(target: MultipartTarget): Promise<void> {
    try {
      await this.bucket.resumeMultipartUpload(target.key, target.storeUploadId).abort();
    } catch (error) {
      if (!isNoSuchUpload(error)) throw error;
    }
    await this.ledger.clear(target.uploadId);
  }

  receiveUpload(key: string, body: ReadableStream, expected: ExpectedContent): Promise<void> {
    return this.put(key, body, expected);
  }

  async put(
    key: string,
    body: ReadableStream | Uint8Array,
    expected: { size: number; sha256Hex?: string },
  ): Promise<void> {
    const payload = body instanceof Uint8Array ? body : withKnownLength(body, expected.size);
    const checksum = expected.sha256Hex ? { sha256: expected.sha256Hex } : {};
    let written: R2Object;
    try {
      written = await this.bucket.put(key, payload, checksum);
    } catch (error) {
      if (/checksum|sha-?256|digest/i.test(String(error))) {
        throw new ContentRejectedError(
          "checksum",
          "body SHA-256 differs from the declared checksum",
        );
      }
      if (/length|size|bytes/i.test(String(error))) {
        throw new ContentRejectedError("length", "body length differs from the declared size");
      }
      throw error;
    }
    // A checksum match implies the length, but say so explicitly should a store ever differ.
    if (written.size !== expected.size) {
      await this.bucket.delete(key);
      throw new ContentRejectedError("length", "body length differs from the declared size");
    }
  }

  async head(key: string): Promise<{ size: number } | null> {
    const object = await this.bucket.head(key);
    return object ? { size: object.size } : null;
  }

  async writtenAt(key: string): Promise<number | null> {
    const object = await this.bucket.head(key);
    return object ? object.uploaded.getTime() : null;
  }

  /** The binding cannot copy: the bytes go out and back in, checked against R2's own SHA-256. */
  async rewrite(key: string): Promise<boolean> {
    const object = await this.bucket.get(key);
    if (!object) return false;
    const { sha256 } = object.checksums;
    await this.bucket.put(key, withKnownLength(object.body, object.size), {
      httpMetadata: object.httpMetadata,
      customMetadata: object.customMetadata,
      ...(sha256 ? { sha256 } : {}),
    });
    return true;
  }

  async get(
    key: string,
    range?: ByteRange,
  ): Promise<{ body: ReadableStream; size: number } | null> {
    const object = await this.bucket.get(key, range ? { range } : undefined);
    if (!object) return null;
    return { body: object.body, size: object.size };
  }

  async delete(key: string): Promise<void> {
    await this.bucket.delete(key);
  }
}

/** R2 reports an unknown (completed or aborted) multipart upload as `NoSuchUpload` (10024). */
function isNoSuchUpload(error: unknown): boolean {
  return /NoSuchUpload|10024|upload does not exist|not found/i.test(String(error));
}
