/**
 * A small POSIX tar (pax interchange format) writer and reader: ustar headers, with a pax
 * extended header (`x`) before any entry whose name or link target does not fit ustar (longer
 * than 100 bytes, or not ASCII) or whose size exceeds ustar's 8 GiB. The reader also takes GNU
 * long names (`L`, `K`) and base-256 numbers, as GNU tar writes them.
 */

export const BLOCK = 512;

/** Entry types as the shim writes and extracts them. */
export type EntryType = "file" | "directory" | "symlink" | "hardlink" | "other";

/** One tar header's worth of metadata. */
export interface TarHeader {
  /** The path inside the archive, `/`-separated; directories without a trailing slash. */
  name: string;
  type: EntryType;
  /** Permission bits (and setuid/setgid/sticky). */
  mode: number;
  /** Seconds since the epoch. */
  mtime: number;
  /** Bytes of content that follow the header (0 for anything but regular files, as written). */
  size: number;
  /** The target of a symlink or hard link. */
  linkname: string;
}

const TYPE_FLAGS: Record<Exclude<EntryType, "other">, string> = {
  file: "0",
  directory: "5",
  symlink: "2",
  hardlink: "1",
};

/** The largest size ustar's 11 octal digits hold. */
const MAX_USTAR_SIZE = 0o77777777777;

/** The header block(s) for one entry: a pax header first when ustar cannot hold it. */
export function encodeHeader(entry: TarHeader): Buffer {
  if (entry.type === "other") throw new Error("cannot write an entry of type other");
  const name = entry.type === "directory" ? `${entry.name}/` : entry.name;
  const pax: [string, string][] = [];
  if (!fitsUstar(name)) pax.push(["path", name]);
  if (entry.linkname && !fitsUstar(entry.linkname)) pax.push(["linkpath", entry.linkname]);
  if (entry.size > MAX_USTAR_SIZE) pax.push(["size", String(entry.size)]);
  const main = ustarBlock({
    name: fitsUstar(name) ? name : asciiFallback(name),
    mode: entry.mode,
    size: entry.size > MAX_USTAR_SIZE ? 0 : entry.size,
    mtime: entry.mtime,
    flag: TYPE_FLAGS[entry.type],
    linkname: fitsUstar(entry.linkname) ? entry.linkname : asciiFallback(entry.linkname),
  });
  if (pax.length === 0) return main;
  const body = Buffer.from(pax.map(([key, value]) => paxRecord(key, value)).join(""), "utf8");
  const paxHeader = ustarBlock({
    name: asciiFallback(`PaxHeaders/${name.replace(/\/$/, "").split("/").pop() ?? ""}`),
    mode: 0o644,
    size: body.length,
    mtime: entry.mtime,
    flag: "x",
    linkname: "",
  });
  return Buffer.concat([paxHeader, body, padding(body.length), main]);
}

/** Zeros up to the next block boundary after `size` bytes. */
export function padding(size: number): Buffer {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
}

/** The end of an archive: two zero blocks. */
export const END_OF_ARCHIVE = Buffer.alloc(2 * BLOCK);

function fitsUstar(text: string): boolean {
  return Buffer.byteLength(text) <= 100 && /^[\x20-\x7e]*$/.test(text);
}

/** What a reader without pax support sees: printable ASCII, at most 100 bytes. */
function asciiFallback(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "_").slice(-100);
}

/** `<length> <key>=<value>\n`, where the length counts itself. */
function paxRecord(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  const restBytes = Buffer.byteLength(rest);
  let length = restBytes + 1;
  while (String(length).length + restBytes !== length) length++;
  return `${length}${rest}`;
}

interface UstarFields {
  name: string;
  mode: number;
  size: number;
  mtime: number;
  flag: string;
  linkname: string;
}

function ustarBlock(fields: UstarFields): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(fields.name, 0, 100, "utf8");
  writeOctal(block, 100, 8, fields.mode & 0o7777);
  writeOctal(block, 108, 8, 0); // uid: owners are not carried over
  writeOctal(block, 116, 8, 0); // gid
  writeOctal(block, 124, 12, fields.size);
  writeOctal(block, 136, 12, Math.max(0, Math.floor(fields.mtime)));
  block.write("        ", 148, 8, "latin1"); // checksum: spaces while summing
  block.write(fields.flag, 156, 1, "latin1");
  block.write(fields.linkname, 157, 100, "utf8");
  block.write("ustar\u000000", 257, 8, "latin1");
  const sum = block.reduce((total, byte) => total + byte, 0);
  block.write(sum.toString(8).padStart(6, "0") + "\u0000 ", 148, 8, "latin1");
  return block;
}

function writeOctal(block: Buffer, offset: number, length: number, value: number): void {
  block.write(value.toString(8).padStart(length - 1, "0") + "\u0000", offset, length, "latin1");
}

/** A header the reader found, with any pax or GNU long-name overrides applied. */
export interface ReadEntry extends TarHeader {
  /** The raw type flag, for messages about entries that are skipped. */
  flag: string;
}

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
    let overrides: Record<string, string> = {};
    for (;;) {
      const block = await this.take(BLOCK, true);
      if (block === undefined || block.every((byte) => byte === 0)) return undefined;
      const header = parseHeader(block);
      if (
        header.flag === "x" ||
        header.flag === "g" ||
        header.flag === "L" ||
        header.flag === "K"
      ) {
        const body = await this.take(header.size, false);
        await this.take(padding(header.size).length, false);
        if (header.flag === "x") overrides = { ...overrides, ...parsePax(body!) };
        if (header.flag === "L") overrides.path = cString(body!);
        if (header.flag === "K") overrides.linkpath = cString(body!);
        continue; // A global header ("g") is read past: nothing in it matters here.
      }
      if (overrides.path !== undefined) header.name = overrides.path;
      if (overrides.linkpath !== undefined) header.linkname = overrides.linkpath;
      if (overrides.size !== undefined) header.size = parseDecimal(overrides.size, "size");
      if (overrides.mtime !== undefined) header.mtime = Math.floor(Number(overrides.mtime));
      // Links carry no data whatever their size field says; other entries may (GNU dumpdirs).
      if (header.type === "symlink" || header.type === "hardlink") header.size = 0;
      return header;
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
    await this.take(padding(size).length, false);
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

/** The error for an archive that is not tar, or is damaged. */
export class TarFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TarFormatError";
  }
}

function truncated(): TarFormatError {
  return new TarFormatError("the archive ends in the middle of an entry");
}

function parseHeader(block: Buffer): ReadEntry {
  const stored = parseNumber(block, 148, 8, "checksum");
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  if (stored !== sum) throw new TarFormatError("not a tar archive, or a damaged one (bad header)");
  const flag = String.fromCharCode(block[156]!);
  const isUstar = block.toString("latin1", 257, 262) === "ustar";
  const prefix = isUstar ? cString(block.subarray(345, 500)) : "";
  const base = cString(block.subarray(0, 100));
  const type: EntryType =
    flag === "0" || flag === "\u0000" || flag === "7"
      ? "file"
      : flag === "5"
        ? "directory"
        : flag === "2"
          ? "symlink"
          : flag === "1"
            ? "hardlink"
            : "other";
  return {
    name: prefix ? `${prefix}/${base}` : base,
    type,
    flag,
    mode: parseNumber(block, 100, 8, "mode"),
    size: parseNumber(block, 124, 12, "size"),
    mtime: parseNumber(block, 136, 12, "mtime"),
    linkname: cString(block.subarray(157, 257)),
  };
}

/** An octal field (NUL or space terminated), or a GNU base-256 one (high bit set). */
function parseNumber(block: Buffer, offset: number, length: number, what: string): number {
  const field = block.subarray(offset, offset + length);
  if (field[0]! & 0x80) {
    if (field[0] === 0xff) throw new TarFormatError(`negative ${what} in a tar header`);
    let value = field[0]! & 0x7f;
    for (let i = 1; i < field.length; i++) value = value * 256 + field[i]!;
    if (!Number.isSafeInteger(value)) throw new TarFormatError(`${what} too large in a tar header`);
    return value;
  }
  const text = field
    .toString("latin1")
    .replace(/[\u0000 ]+.*$/s, "")
    .trim();
  if (text === "") return 0;
  if (!/^[0-7]+$/.test(text)) throw new TarFormatError(`not a tar archive (bad ${what} field)`);
  return parseInt(text, 8);
}

function parseDecimal(text: string, what: string): number {
  if (!/^\d+$/.test(text)) throw new TarFormatError(`bad ${what} in a pax header`);
  return Number(text);
}

function cString(bytes: Buffer): string {
  const end = bytes.indexOf(0);
  return bytes.subarray(0, end === -1 ? bytes.length : end).toString("utf8");
}

function parsePax(body: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let at = 0;
  while (at < body.length) {
    const space = body.indexOf(0x20, at);
    if (space === -1) break;
    const length = Number(body.toString("latin1", at, space));
    if (!Number.isInteger(length) || length <= 0 || at + length > body.length) {
      throw new TarFormatError("bad pax header in the archive");
    }
    const record = body.toString("utf8", space + 1, at + length - 1); // without the newline
    const equals = record.indexOf("=");
    if (equals > 0) out[record.slice(0, equals)] = record.slice(equals + 1);
    at += length;
  }
  return out;
}
