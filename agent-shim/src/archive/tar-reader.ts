import {
  BLOCK,
  TarFormatError,
  addOverrides,
  isEndBlock,
  isMetadata,
  paddingLength,
  parseHeader,
  withOverrides,
  type Overrides,
  type ReadEntry,
} from "../../../src/content/tar-header.js";

/**
 * The most pax extended header and GNU long-name bytes read before one entry (their bodies are
 * held in memory to be parsed): far beyond any real path, small enough to never matter.
 */
export const MAX_META_BYTES = 1024 * 1024;

/**
 * Reads an uncompressed tar stream block by block with bounded memory: the caller gets each
 * entry's header, then must consume exactly `entry.size` bytes through `content()` (or
 * `skip()`) before asking for the next entry.
 */
export class TarReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private done = false;
  private readonly source: AsyncIterator<Buffer>;

  constructor(chunks: AsyncIterable<Buffer>) {
    this.source = chunks[Symbol.asyncIterator]();
  }

  /** The next entry, or undefined at the end of the archive. */
  async next(): Promise<ReadEntry | undefined> {
    let overrides: Overrides = {};
    let metaBytes = 0;
    for (;;) {
      const block = await this.take(BLOCK, true);
      if (block === undefined || isEndBlock(block)) return undefined;
      const header = parseHeader(block);
      if (!isMetadata(header.flag)) return withOverrides(header, overrides);
      metaBytes += header.size;
      if (metaBytes > MAX_META_BYTES) {
        throw new TarFormatError("pax or GNU long-name headers over 1 MiB for one entry");
      }
      const body = await this.take(header.size, false);
      await this.take(paddingLength(header.size), false);
      overrides = addOverrides(header.flag, body!, overrides);
    }
  }

  /** The current entry's content, in chunks; then its padding is read past. */
  async *content(size: number): AsyncGenerator<Buffer> {
    let left = size;
    while (left > 0) {
      if (this.pendingBytes === 0 && !(await this.fill())) throw truncated();
      const chunk = this.takeAvailable(left);
      left -= chunk.length;
      yield chunk;
    }
    await this.take(paddingLength(size), false);
  }

  /** Reads past the current entry's content. */
  async skip(size: number): Promise<void> {
    const chunks = this.content(size);
    while (!(await chunks.next()).done) {
      // Discarded.
    }
  }

  private async fill(): Promise<boolean> {
    if (this.done) return false;
    const { value, done } = await this.source.next();
    if (done) {
      this.done = true;
      return false;
    }
    this.pending.push(value);
    this.pendingBytes += value.length;
    return true;
  }

  private takeAvailable(max: number): Buffer {
    const first = this.pending[0]!;
    if (first.length <= max) {
      this.pending.shift();
      this.pendingBytes -= first.length;
      return first;
    }
    this.pending[0] = first.subarray(max);
    this.pendingBytes -= max;
    return first.subarray(0, max);
  }

  /** Exactly `n` bytes; at the very end of the stream, undefined when `endOk`. */
  private async take(n: number, endOk: boolean): Promise<Buffer | undefined> {
    while (this.pendingBytes < n) {
      if (!(await this.fill())) {
        if (endOk && this.pendingBytes === 0) return undefined;
        throw truncated();
      }
    }
    const parts: Buffer[] = [];
    let left = n;
    while (left > 0) {
      const part = this.takeAvailable(left);
      parts.push(part);
      left -= part.length;
    }
    return Buffer.concat(parts, n);
  }
}

function truncated(): TarFormatError {
  return new TarFormatError("the archive ends in the middle of an entry");
}
