import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { Transform, type TransformCallback } from "node:stream";
import { fsError } from "../cli/errors.js";
import { maxStoredSize, partCount, partSizeFor } from "../../../src/part-plan.js";
import { multipartThreshold } from "./multipart-threshold.js";

/**
 * The SHA-256 of each `partSize` slice of a byte stream, taken as the bytes go by: one running
 * hash at a time, so memory stays flat whatever the part size.
 */
export class PartDigests {
  private hash: Hash = createHash("sha256");
  private filled = 0;
  private readonly done: string[] = [];

  constructor(readonly partSize: number) {}

  update(chunk: Buffer): void {
    for (let offset = 0; offset < chunk.length;) {
      const take = Math.min(this.partSize - this.filled, chunk.length - offset);
      this.hash.update(chunk.subarray(offset, offset + take));
      this.filled += take;
      offset += take;
      if (this.filled === this.partSize) this.cut();
    }
  }

  /** The lowercase hex digests, in order: the last part may be short; no bytes make one empty part. */
  finish(): string[] {
    if (this.filled > 0 || this.done.length === 0) this.cut();
    return this.done;
  }

  private cut(): void {
    this.done.push(this.hash.digest("hex"));
    this.hash = createHash("sha256");
    this.filled = 0;
  }
}

/** A pass-through stream that takes the part digests of what flows through it. */
export class PartDigestStream extends Transform {
  readonly parts: PartDigests;

  constructor(partSize: number) {
    super();
    this.parts = new PartDigests(partSize);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.parts.update(chunk);
    callback(null, chunk);
  }
}

/**
 * The part size to take digests at while stored bytes are produced, when they may end up above
 * the multipart threshold: `size` is the original size and `mayGrow` says whether the stored
 * form is gzip (whose output may come out a little larger than its input). Undefined when the
 * upload will surely be a single PUT.
 */
export function digestPartSize(size: number, mayGrow: boolean): number | undefined {
  const largest = mayGrow ? maxStoredSize(size) : size;
  return largest > multipartThreshold() ? partSizeFor(size) : undefined;
}

/** Whether digests taken for `storedSize` stored bytes fit the part plan of a `size`-byte file. */
export function digestsFit(
  digests: string[] | undefined,
  size: number,
  storedSize: number,
): digests is string[] {
  return digests?.length === partCount(storedSize, partSizeFor(size));
}

/** A pass of its own over a file for its part digests (for bytes whose size came too late). */
export async function digestFileParts(path: string, partSize: number): Promise<string[]> {
  const parts = new PartDigests(partSize);
  try {
    for await (const chunk of createReadStream(path)) parts.update(chunk as Buffer);
  } catch (err) {
    throw fsError("read", path, err);
  }
  return parts.finish();
}
