import { hexToBase64 } from "../encoding";
import {
  ContentRejectedError,
  type BlobStore,
  type ByteRange,
  type ExpectedContent,
  type PutInstructions,
  type UploadUrlRequest,
} from "./blob-store";
import { withKnownLength } from "./known-length";

/** Makes the relay's own signed URL for an upload it will receive. */
export type RelayUploadUrlSigner = (
  origin: string,
  uploadId: string,
  expiresAt: number,
) => Promise<string>;

/**
 * R2 through the Worker binding. Clients cannot reach the binding, so uploads go
 * through the relay (`receiveUpload`), and R2 itself verifies each body's SHA-256.
 */
export class R2BlobStore implements BlobStore {
  readonly kind = "r2";

  constructor(
    private readonly bucket: R2Bucket,
    private readonly signUploadUrl: RelayUploadUrlSigner,
  ) {}

  async createUploadUrl(request: UploadUrlRequest): Promise<PutInstructions> {
    return {
      method: "PUT",
      url: await this.signUploadUrl(request.relayOrigin, request.uploadId, request.expiresAt),
      headers: {
        "content-length": String(request.size),
        "content-type": request.contentType,
        "x-amz-checksum-sha256": hexToBase64(request.sha256Hex),
      },
    };
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
