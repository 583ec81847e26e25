import { createHash } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";

/** What the bytes through a `DigestStream` must be, and the error to fail with otherwise. */
export interface Expected {
  /** Unknown when a server streams without a Content-Length. */
  bytes: number | undefined;
  sha256: string;
  mismatch: () => Error;
}

/**
 * A pass-through stream that computes the SHA-256 and length of what flows through it. Given
 * `expected`, it fails as soon as there are too many bytes, and at the end if there were too few
 * or they hash differently, so nothing downstream mistakes a changed source for a complete one.
 */
export class DigestStream extends Transform {
  private readonly hash = createHash("sha256");
  private digest: string | undefined;
  /** Bytes seen so far. */
  bytes = 0;

  constructor(private readonly expected?: Expected) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    const { expected } = this;
    if (expected?.bytes !== undefined && this.bytes > expected.bytes) {
      callback(expected.mismatch());
      return;
    }
    this.hash.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    const { expected } = this;
    if (!expected) return callback();
    const sizeMatches = expected.bytes === undefined || this.bytes === expected.bytes;
    callback(sizeMatches && this.hex() === expected.sha256 ? null : expected.mismatch());
  }

  /** The lowercase hex SHA-256 of everything seen; final once the stream has ended. */
  hex(): string {
    this.digest ??= this.hash.digest("hex");
    return this.digest;
  }
}
