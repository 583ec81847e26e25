import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import type { S3Config } from "../config";
import { hexToBase64 } from "../encoding";
import {
  ContentRejectedError,
  type BlobStore,
  type ByteRange,
  type ExpectedContent,
  type PutInstructions,
  type UploadUrlRequest,
} from "./blob-store";

/** Headers a presigned PUT signs, so the store refuses any other length or checksum. */
const SIGNED_PUT_HEADERS = new Set(["content-length", "content-type", "x-amz-checksum-sha256"]);

/**
 * Any S3-compatible store (AWS S3, R2's S3 API, MinIO). Clients PUT straight to the
 * store through presigned URLs whose signature covers Content-Length and
 * x-amz-checksum-sha256, so the store itself verifies every body.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = "s3";
  private readonly client: S3Client;

  constructor(private readonly config: S3Config) {
    this.client = new S3Client({
      endpoint: config.endpoint,
      region: config.region,
      forcePathStyle: true,
      credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
      // Checksums are ours to choose; the SDK's default CRC32 would be signed into URLs.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
  }

  async createUploadUrl(request: UploadUrlRequest): Promise<PutInstructions> {
    const checksum = hexToBase64(request.sha256Hex);
    const command = new PutObjectCommand({
      Bucket: this.config.bucket,
      Key: request.key,
      ContentLength: request.size,
      ContentType: request.contentType,
      ChecksumSHA256: checksum,
    });
    const expiresIn = Math.max(1, Math.floor((request.expiresAt - Date.now()) / 1000));
    const url = await getSignedUrl(this.client, command, {
      expiresIn,
      signableHeaders: SIGNED_PUT_HEADERS,
      unhoistableHeaders: new Set(["x-amz-checksum-sha256"]),
    });
    return {
      method: "PUT",
      url,
      headers: {
        "content-length": String(request.size),
        "content-type": request.contentType,
        "x-amz-checksum-sha256": checksum,
      },
    };
  }

  async put(key: string, body: ReadableStream | Uint8Array, expected: ExpectedContent): Promise<void> {
    const payload = body instanceof Uint8Array ? body : withKnownLength(body, expected.size);
    try {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.config.bucket,
          Key: key,
          Body: payload,
          ContentLength: expected.size,
          ChecksumSHA256: hexToBase64(expected.sha256Hex),
        }),
      );
    } catch (error) {
      if (error instanceof S3ServiceException && /BadDigest|Checksum/i.test(error.name)) {
        throw new ContentRejectedError("checksum", "body SHA-256 differs from the declared checksum");
      }
      if (error instanceof S3ServiceException && /IncompleteBody|BadRequest/i.test(error.name)) {
        throw new ContentRejectedError("length", "body length differs from the declared size");
      }
      throw error;
    }
  }

  async head(key: string): Promise<{ size: number } | null> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.config.bucket, Key: key }));
      return { size: head.ContentLength ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async get(key: string, range?: ByteRange): Promise<{ body: ReadableStream; size: number } | null> {
    if (range && range.length === 0) {
      const head = await this.head(key);
      return head ? { body: new Blob([]).stream(), size: head.size } : null;
    }
    try {
      const object = await this.client.send(
        new GetObjectCommand({
          Bucket: this.config.bucket,
          Key: key,
          Range: range ? `bytes=${range.offset}-${range.offset + range.length - 1}` : undefined,
        }),
      );
      if (!object.Body) return null;
      const size = range ? totalFromContentRange(object.ContentRange) : (object.ContentLength ?? 0);
      return { body: object.Body.transformToWebStream(), size };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: key }));
  }
}

function isNotFound(error: unknown): boolean {
  return (
    error instanceof S3ServiceException &&
    (error.$metadata.httpStatusCode === 404 || error.name === "NotFound" || error.name === "NoSuchKey")
  );
}

function totalFromContentRange(header: string | undefined): number {
  const total = header?.split("/")[1];
  return total && total !== "*" ? Number(total) : 0;
}

/** Workers send a stream with Content-Length only when the stream's length is known. */
function withKnownLength(body: ReadableStream, size: number): ReadableStream {
  const fixed = new FixedLengthStream(size);
  body.pipeTo(fixed.writable).catch(() => {});
  return fixed.readable;
}
