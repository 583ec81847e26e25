import {
  BLOCK,
  addOverrides,
  isEndBlock,
  isMetadata,
  paddingLength,
  parseHeader,
  withOverrides,
  type Overrides,
} from "../../content/tar-header";
import type { TarEntry, TarListing } from "../../content/tar-listing-types";

// The share page still imports them from here.
export type { TarEntry, TarListing } from "../../content/tar-listing-types";

/**
 * How far a listing reads: it runs once per stored archive, but on bytes anyone may have
 * uploaded (a gzip bomb among them), so its time and memory must stay small whatever they are.
 * `bytes` counts the tar stream, i.e. what a tar.gz inflates to: the inflated-bytes cap.
 */
export const TAR_LIMITS = { entries: 500, bytes: 64 * 1024 * 1024 };
/** Longer entry names (GNU long names and pax paths may run to megabytes) are cut. */
const MAX_ENTRY_NAME = 512;

/** Links, devices, directories and FIFOs: no contents follow their header. */
const NO_DATA = new Set(["1", "2", "3", "4", "5", "6"]);
/** Pax and GNU long-name contents read before one entry: longer ones end the listing. */
const MAX_META_BYTES = 64 * 1024;

/**
 * Lists a tar stream (ustar, with GNU long names and pax headers) by reading its 512-byte
 * headers and skipping the contents. Returns null when the stream does not start with a
 * valid tar header. Always cancels the stream.
 */
export async function listTar(
  stream: ReadableStream<Uint8Array>,
  limits = TAR_LIMITS,
): Promise<TarListing | null> {
  const input = new BlockReader(stream.getReader(), limits.bytes);
  const entries: TarEntry[] = [];
  let overrides: Overrides = {};
  try {
    for (;;) {
      if (entries.length >= limits.entries) return { entries, stopped: "entries" };
      const block = await input.read(BLOCK);
      if (input.overLimit) return { entries, stopped: "bytes" };
      if (!block) return entries.length ? { entries } : null;
      if (isEndBlock(block)) return { entries };
      const header = parseHeader(block);
      if (isMetadata(header.flag)) {
        const body = header.size <= MAX_META_BYTES ? await input.read(header.size) : null;
        if (!body || !(await input.skip(paddingLength(header.size)))) return ended(entries, input);
        overrides = addOverrides(header.flag, body, overrides);
        continue;
      }
      const { name, type, size, linkname } = withOverrides(header, overrides);
      overrides = {};
      entries.push({
        name: cut(name),
        size: type === "file" ? size : 0,
        type,
        ...(type === "symlink" || type === "hardlink" ? { linkTarget: cut(linkname) } : {}),
        ...(type === "file" ? { offset: input.position } : {}),
      });
      if (!NO_DATA.has(header.flag) && !(await input.skip(size + paddingLength(size))))
        return ended(entries, input);
    }
  } catch {
    // Not a tar header (TarFormatError), or the stream failed.
    return entries.length ? { entries, stopped: "corrupt" } : null;
  } finally {
    await input.cancel();
  }
}

/** A listing cut short inside an entry: by the byte limit, or by a truncated archive. */
function ended(entries: TarEntry[], input: BlockReader): TarListing {
  return { entries, stopped: input.overLimit ? "bytes" : "corrupt" };
}

function cut(text: string): string {
  if (text.length <= MAX_ENTRY_NAME) return text;
  return `${Array.from(text).slice(0, MAX_ENTRY_NAME).join("")}…`;
}

/** Exact reads and skips over a byte stream that ends early once `limit` bytes were pulled. */
class BlockReader {
  overLimit = false;
  private consumed = 0;
  private buffer: Uint8Array = new Uint8Array(0);

  constructor(
    private readonly reader: ReadableStreamDefaultReader<Uint8Array>,
    private readonly limit: number,
  ) {}

  /** Exactly `n` bytes, or null when the stream ends first. */
  async read(n: number): Promise<Uint8Array | null> {
    while (this.buffer.byteLength < n) {
      const chunk = await this.pull();
      if (!chunk) return null;
      const joined = new Uint8Array(this.buffer.byteLength + chunk.byteLength);
      joined.set(this.buffer);
      joined.set(chunk, this.buffer.byteLength);
      this.buffer = joined;
    }
    const out = this.buffer.subarray(0, n);
    this.buffer = this.buffer.subarray(n);
    return out;
  }

  /** Discards `n` bytes; false when the stream ends first. */
  async skip(n: number): Promise<boolean> {
    while (this.buffer.byteLength < n) {
      n -= this.buffer.byteLength;
      const chunk = await this.pull();
      if (!chunk) return false;
      this.buffer = chunk;
    }
    this.buffer = this.buffer.subarray(n);
    return true;
  }

  /** Bytes of the stream read past so far. */
  get position(): number {
    return this.consumed - this.buffer.byteLength;
  }

  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {});
  }

  private async pull(): Promise<Uint8Array | null> {
    if (this.consumed >= this.limit) {
      this.overLimit = true;
      return null;
    }
    const { done, value } = await this.reader.read();
    if (done) return null;
    this.consumed += value.byteLength;
    return value;
  }
}
