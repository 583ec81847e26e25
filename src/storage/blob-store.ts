import type { StoredPart } from "../db/upload-parts";
import { hexToBase64 } from "../encoding";
import type { PutInstructions } from "../wire-types";

export type { StoredPart } from "../db/upload-parts";
export type { PutInstructions } from "../wire-types";

/**
 * How long a store URL a download is redirected to lives. Whoever holds it may fetch it
 * again until then without anything counting: a few seconds is all a client needs. An
 * object such a URL may name is deleted only once that has passed.
 */
export const STORE_URL_TTL_MS = 60_000;

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

  /**
   * When the object at `key` was last written (ms since the epoch), which is when the bucket's
   * age rules start counting; null when there is none.
   */
  writtenAt(key: string): Promise<number | null>;

  /**
   * Writes the object at `key` again with the same bytes (and metadata), so that the bucket's
   * age rules count from now; false when there is no object.
   */
  rewrite(key: string): Promise<boolean>;

  /**
   * Present only on stores a client can read from directly (S3): a presigned GET of `key`
   * that answers with the given Content-Disposition and Content-Type (signed overrides), so
   * the bytes need not pass through the relay. With `range`, the exact `Range` header value
   * is signed too: the URL serves that range and nothing else.
   */
  createDownloadUrl?(key: string, request: DownloadUrlRequest): Promise<string>;

  /**
   * Present on stores whose presigned URLs show their keys (S3): copies the object at
   * `fromKey` to `toKey` inside the store (the bytes never pass through the relay), so a
   * file can be moved onto a key that names nothing but its content.
   */
  copy?(fromKey: string, toKey: string): Promise<void>;

  /** Streams the object (or the byte range) at `key`, or null when there is none. */
  get(key: string, range?: ByteRange): Promise<{ body: ReadableStream; size: number } | null>;

  /** Removes the object; removing a missing key is not an error. */
  delete(key: string): Promise<void>;

  /** Starts a multipart upload that will become the object at `key`; returns the store's id. */
  createMultipartUpload(key: string): Promise<string>;

  /**
   * Instructions to PUT one part; the store (or the relay, for stores it fronts) refuses a
   * body whose length or SHA-256 differ from the part's.
   */
  createPartUploadUrl(request: PartUrlRequest): Promise<PutInstructions>;

  /** Present only on stores the relay fronts (R2): streams one part in, verifying it. */
  receivePart?(target: MultipartTarget, part: ExpectedPart, body: ReadableStream): Promise<void>;

  /** The parts the store holds, ascending. Throws `MultipartUploadGoneError` for an unknown upload. */
  listParts(target: MultipartTarget): Promise<StoredPart[]>;

  /** Assembles the parts into the object at `target.key`. */
  completeMultipartUpload(target: MultipartTarget, parts: StoredPart[]): Promise<void>;

  /** Drops the upload and its parts; an unknown upload is not an error. */
  abortMultipartUpload(target: MultipartTarget): Promise<void>;
}

/** A multipart upload: the relay's upload id, the store's id for it and the key it becomes. */
export interface MultipartTarget {
  uploadId: string;
  storeUploadId: string;
  key: string;
}

/** What one part must be. */
export interface ExpectedPart {
  partNumber: number;
  size: number;
  sha256Hex: string;
}

export interface PartUrlRequest extends ExpectedPart {
  target: MultipartTarget;
  expiresAt: number;
  /** The relay's own origin, for stores whose uploads go through the relay. */
  relayOrigin: string;
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

export interface DownloadUrlRequest {
  expiresAt: number;
  contentDisposition: string;
  contentType: string;
  /** The client's `Range` header, as it will send it again to the store. */
  range?: string;
}

export interface ExpectedContent {
  size: number;
  sha256Hex: string;
}

export interface ByteRange {
  offset: number;
  length: number;
}

/** Thrown by a store that no longer knows a multipart upload (completed, aborted or expired). */
export class MultipartUploadGoneError extends Error {
  constructor(message = "the store no longer has this multipart upload") {
    super(message);
    this.name = "MultipartUploadGoneError";
  }
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

/**
 * The headers a client must send with an upload or a part, exactly: S3 signs them into the
 * presigned URL, and the relay checks them before it streams a body into R2.
 */
export function signedPutHeaders(
  size: number,
  sha256Hex: string,
  contentType?: string,
): Record<string, string> {
  return {
    "content-length": String(size),
    ...(contentType ? { "content-type": contentType } : {}),
    "x-amz-checksum-sha256": hexToBase64(sha256Hex),
  };
}
