import type { PutInstructions } from "../wire-types";

export type { PutInstructions } from "../wire-types";

/**
 * The one contract every object store implements. Keys are chosen by the relay
 * (content-addressed); a store never decides what a key means.
 */
export interface BlobStore {
  /** Short name for logs and health output ("r2", "s3"). */
  readonly kind: string;

  /**
   * Instructions for a client to PUT exactly `size` bytes whose SHA-256 is
   * `sha256Hex` to `key`. The store (or the relay, for stores it fronts) must refuse
   * any other body, so the key can never hold bytes other than the declared ones.
   */
  createUploadUrl(request: UploadUrlRequest): Promise<PutInstructions>;

  /**
   * Present only on stores the relay fronts (R2): writes a client's PUT body to `key`,
   * refusing a body whose length or SHA-256 differ from the expected ones.
   */
  receiveUpload?(key: string, body: ReadableStream, expected: ExpectedContent): Promise<void>;

  /**
   * Writes bytes from the relay itself, verifying the SHA-256 when one is given (a
   * staging write, whose hash the relay is computing as it goes, has none yet).
   */
  put(
    key: string,
    body: ReadableStream | Uint8Array,
    expected: { size: number; sha256Hex?: string },
  ): Promise<void>;

  /** Size of the object at `key`, or null when there is none. */
  head(key: string): Promise<{ size: number } | null>;

  /** Streams the object (or the byte range) at `key`, or null when there is none. */
  get(key: string, range?: ByteRange): Promise<{ body: ReadableStream; size: number } | null>;

  /** Removes the object; removing a missing key is not an error. */
  delete(key: string): Promise<void>;
}

export interface UploadUrlRequest {
  key: string;
  uploadId: string;
  size: number;
  sha256Hex: string;
  contentType: string;
  expiresAt: number;
  /** The relay's own origin, for stores whose uploads go through the relay. */
  relayOrigin: string;
}

export interface ExpectedContent {
  size: number;
  sha256Hex: string;
}

export interface ByteRange {
  offset: number;
  length: number;
}

/** Thrown by a store when a body's length or checksum differs from what was expected. */
export class ContentRejectedError extends Error {
  constructor(
    readonly reason: "length" | "checksum",
    message: string,
  ) {
    super(message);
    this.name = "ContentRejectedError";
  }
}
