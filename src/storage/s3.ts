import type { S3Config } from "../config";
import { hexToBase64 } from "../encoding";
import {
  ContentRejectedError,
  type BlobStore,
  type ByteRange,
  type DownloadUrlRequest,
  type MultipartTarget,
  type PartUrlRequest,
  type PutInstructions,
  type StoredPart,
  type UploadUrlRequest,
  signedPutHeaders,
} from "./blob-store";
import { withKnownLength } from "../content/known-length";
import { S3Http, s3ErrorCode, s3ErrorCodeIn } from "./s3-http";
import { S3Multipart } from "./s3-multipart";

/**
 * Any S3-compatible store (AWS S3, R2's S3 API, MinIO). Clients PUT straight to the
 * store through presigned URLs whose signature covers Content-Length and
 * x-amz-checksum-sha256, so the store itself verifies every body.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = "s3";
  private readonly http: S3Http;
  private readonly multipart: S3Multipart;

  constructor(config: S3Config) {
    this.http = new S3Http(config);
    this.multipart = new S3Multipart(this.http);
  }

  async createUploadUrl(request: UploadUrlRequest): Promise<PutInstructions> {
    const headers = signedPutHeaders(request.size, request.sha256Hex, request.contentType);
    return this.presignPut(request.key, headers, request.expiresAt);
  }

  createMultipartUpload(key: string): Promise<string> {
    return this.multipart.create(key);
  }

  /** A presigned UploadPart: S3 refuses a part whose length or SHA-256 differ. */
  createPartUploadUrl(request: PartUrlRequest): Promise<PutInstructions> {
    const headers = signedPutHeaders(request.size, request.sha256Hex);
    const query = this.multipart.partQuery(request.target, request.partNumber);
    return this.presignPut(request.target.key, headers, request.expiresAt, query);
  }

  listParts(target: MultipartTarget): Promise<StoredPart[]> {
    return this.multipart.list(target);
  }

  completeMultipartUpload(target: MultipartTarget, parts: StoredPart[]): Promise<void> {
    return this.multipart.complete(target, parts);
  }

  abortMultipartUpload(target: MultipartTarget): Promise<void> {
    return this.multipart.abort(target);
  }

  /**
   * A presigned GET whose signature covers the response overrides (and the Range header
   * when one is given): a client cannot change the name or type it is served under.
   */
  createDownloadUrl(key: string, request: DownloadUrlRequest): Promise<string> {
    const headers: Record<string, string> = request.range ? { range: request.range } : {};
    const query = {
      "response-content-disposition": request.contentDisposition,
      "response-content-type": request.contentType,
    };
    return this.http.presign("GET", key, headers, expiresInSeconds(request.expiresAt), query);
  }

  private async presignPut(
    key: string,
    headers: Record<string, string>,
    expiresAt: number,
    query: Record<string, string> = {},
  ): Promise<PutInstructions> {
    return {
      method: "PUT",
      url: await this.http.presign("PUT", key, headers, expiresInSeconds(expiresAt), query),
      headers,
    };
  }

  async put(
    key: string,
    body: ReadableStream | Uint8Array,
    expected: { size: number; sha256Hex?: string },
  ): Promise<void> {
    const payload = body instanceof Uint8Array ? body : withKnownLength(body, expected.size);
    const headers: Record<string, string> = { "content-length": String(expected.size) };
    if (expected.sha256Hex) headers["x-amz-checksum-sha256"] = hexToBase64(expected.sha256Hex);
    const response = await this.http.send("PUT", key, headers, payload);
    if (response.ok) return;
    const code = await s3ErrorCode(response);
    if (/BadDigest|Checksum/i.test(code)) {
      throw new ContentRejectedError("checksum", "body SHA-256 differs from the declared checksum");
    }
    if (/IncompleteBody|ContentLength/i.test(code)) {
      throw new ContentRejectedError("length", "body length differs from the declared size");
    }
    throw new Error(`S3 PUT ${key} failed: ${response.status} ${code}`);
  }

  async head(key: string): Promise<{ size: number } | null> {
    const headers = await this.headers(key);
    return headers && { size: Number(headers.get("content-length") ?? 0) };
  }

  async writtenAt(key: string): Promise<number | null> {
    const headers = await this.headers(key);
    return headers && Date.parse(headers.get("last-modified") ?? "");
  }

  /** A copy onto itself, which S3 allows when the metadata is replaced (here, by the same). */
  async rewrite(key: string): Promise<boolean> {
    const headers = await this.headers(key);
    if (!headers) return false;
    const contentType = headers.get("content-type");
    try {
      await this.copy(key, key, {
        "x-amz-metadata-directive": "REPLACE",
        ...(contentType ? { "content-type": contentType } : {}),
      });
    } catch (error) {
      if (error instanceof S3CopyError && error.code === "NoSuchKey") return false; // deleted since the HEAD
      throw error;
    }
    return true;
  }

  private async headers(key: string): Promise<Headers | null> {
    const response = await this.http.send("HEAD", key);
    if (response.status === 404) return null;
    if (!response.ok) throw new Error(`S3 HEAD ${key} failed: ${response.status}`);
    return response.headers;
  }

  async get(
    key: string,
    range?: ByteRange,
  ): Promise<{ body: ReadableStream; size: number } | null> {
    if (range && range.length === 0) {
      const head = await this.head(key);
      return head ? { body: new Blob([]).stream(), size: head.size } : null;
    }
    const headers: Record<string, string> = range
      ? { range: `bytes=${range.offset}-${range.offset + range.length - 1}` }
      : {};
    const response = await this.http.send("GET", key, headers);
    if (response.status === 404) {
      await response.body?.cancel();
      return null;
    }
    if (!response.ok || !response.body)
      throw new Error(`S3 GET ${key} failed: ${response.status} ${await s3ErrorCode(response)}`);
    const total = response.headers.get("content-range")?.split("/")[1];
    const size = Number(
      total && total !== "*" ? total : (response.headers.get("content-length") ?? 0),
    );
    return { body: response.body, size };
  }

  /** CopyObject (up to 5 GiB, `MAX_FILE_BYTES`'s default); S3 may answer 200 with an error. */
  async copy(fromKey: string, toKey: string, extra: Record<string, string> = {}): Promise<void> {
    const source = { "x-amz-copy-source": this.http.copySource(fromKey), ...extra };
    const response = await this.http.send("PUT", toKey, source, new Uint8Array(0));
    const answer = await response.text();
    if (!response.ok || answer.includes("<Error>")) {
      const code = s3ErrorCodeIn(answer, response.status);
      throw new S3CopyError(
        `S3 copy of ${fromKey} to ${toKey} failed: ${response.status} ${code}`,
        code,
      );
    }
  }

  async delete(key: string): Promise<void> {
    const response = await this.http.send("DELETE", key);
    if (!response.ok && response.status !== 404)
      throw new Error(`S3 DELETE ${key} failed: ${response.status}`);
  }
}

/** A CopyObject S3 refused, with S3's error code. */
class S3CopyError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

function expiresInSeconds(expiresAt: number): number {
  return Math.max(1, Math.floor((expiresAt - Date.now()) / 1000));
}
