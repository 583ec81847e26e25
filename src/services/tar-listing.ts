/** One entry of a tar archive, as the page lists it. */
export interface TarEntry {
  name: string;
  size: number;
  type: "file" | "directory" | "symlink" | "hardlink" | "other";
  linkTarget?: string;
}

/** The entries read, and why reading stopped before the end, if it did. */
export interface TarListing {
  entries: TarEntry[];
  stopped?: "entries" | "bytes" | "corrupt";
}

/**
 * How far a listing reads: it runs once per stored archive, but on bytes anyone may have
 * uploaded (a gzip bomb among them), so its time and memory must stay small whatever they are.
 */
export const TAR_LIMITS = { entries: 500, bytes: 4 * 1024 * 1024 };
/** Longer entry names (GNU long names and pax paths may run to megabytes) are cut. */
const MAX_ENTRY_NAME = 512;

const BLOCK = 512;
const TYPES: Record<string, TarEntry["type"]> = {
  "0": "file",
  "\0": "file",
  "7": "file",
  "5": "directory",
  "2": "symlink",
  "1": "hardlink",
};
/** Links, devices, directories and FIFOs: no contents follow their header. */
const NO_DATA = new Set(["1", "2", "3", "4", "5", "6"]);

/**
 * Lists a tar stream (ustar, with GNU long names and pax paths) by reading its 512-byte
 * headers and skipping the contents. Returns null when the stream does not start with a
 * valid tar header. Always cancels the stream.
 */
export async function listTar(
  stream: ReadableStream<Uint8Array>,
  limits = TAR_LIMITS,
): Promise<TarListing | null> {
  const input = new BlockReader(stream.getReader(), limits.bytes);
  const entries: TarEntry[] = [];
  let override: { path?: string; linkpath?: string } = {};
  try {
    for (;;) {
      if (entries.length >= limits.entries) return { entries, stopped: "entries" };
      const header = await input.read(BLOCK);
      if (input.overLimit) return { entries, stopped: "bytes" };
      if (!header) return entries.length ? { entries } : null;
      if (header.every((b) => b === 0)) return { entries };
      if (!checksumMatches(header)) return entries.length ? { entries, stopped: "corrupt" } : null;
      const size = sizeOf(header);
      const flag = String.fromCharCode(header[156]!);
      if (flag === "L" || flag === "K" || flag === "x" || flag === "g") {
        const data = size <= 64 * 1024 ? await input.read(size) : null;
        if (!data || !(await input.skip(padding(size)))) return ended(entries, input);
        const text = new TextDecoder().decode(data);
        if (flag === "L") override.path = text.replace(/\0.*$/s, "");
        else if (flag === "K") override.linkpath = text.replace(/\0.*$/s, "");
        else if (flag === "x") override = { ...override, ...paxPaths(text) };
        continue;
      }
      let name = field(header, 0, 100);
      // POSIX ustar ("ustar\0") only: old GNU headers keep other fields where the prefix goes.
      if (field(header, 257, 6) === "ustar" && header[262] === 0 && header[345] !== 0)
        name = `${field(header, 345, 155)}/${name}`;
      const type = TYPES[flag] ?? "other";
      const linkTarget = override.linkpath ?? field(header, 157, 100);
      entries.push({
        name: cut(override.path ?? name),
        size: type === "file" ? size : 0,
        type,
        ...(type === "symlink" || type === "hardlink" ? { linkTarget: cut(linkTarget) } : {}),
      });
      override = {};
      if (!NO_DATA.has(flag) && !(await input.skip(size + padding(size))))
        return ended(entries, input);
    }
  } catch {
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

function padding(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK;
}

function field(header: Uint8Array, offset: number, length: number): string {
  const bytes = header.subarray(offset, offset + length);
  const end = bytes.indexOf(0);
  return new TextDecoder().decode(end === -1 ? bytes : bytes.subarray(0, end));
}

function octal(header: Uint8Array, offset: number, length: number): number {
  return parseInt(field(header, offset, length).trim() || "0", 8);
}

/** Sizes of 8 GiB and more are big-endian base-256 with the top bit set (GNU, star). */
function sizeOf(header: Uint8Array): number {
  if (!(header[124]! & 0x80)) return octal(header, 124, 12);
  let size = header[124]! & 0x7f;
  for (let i = 125; i < 136; i++) size = size * 256 + header[i]!;
  return size;
}

function checksumMatches(header: Uint8Array): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i]!;
  return sum === octal(header, 148, 8);
}

/** `path` and `linkpath` from pax records (`<length> <key>=<value>\n`). */
function paxPaths(text: string): { path?: string; linkpath?: string } {
  const found: { path?: string; linkpath?: string } = {};
  for (const match of text.matchAll(/^\d+ (path|linkpath)=(.*)$/gm))
    found[match[1] as "path" | "linkpath"] = match[2];
  return found;
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
