/**
 * Reading tar headers: ustar blocks (with GNU base-256 numbers), pax extended headers and GNU
 * long names. Plain `Uint8Array`s and `TextDecoder` only, so the relay's archive listing and the
 * shim's extractor (bundled for Node) share it.
 */

export const BLOCK = 512;

export type EntryType = "file" | "directory" | "symlink" | "hardlink" | "other";

/** One tar header's worth of metadata. */
export interface TarHeader {
  /** The path inside the archive, `/`-separated. */
  name: string;
  type: EntryType;
  /** Permission bits (and setuid/setgid/sticky). */
  mode: number;
  /** Seconds since the epoch. */
  mtime: number;
  /** Bytes of content that follow the header. */
  size: number;
  /** The target of a symlink or hard link. */
  linkname: string;
}

/** A header as read, with its raw type flag (for messages about entries that are skipped). */
export interface ReadEntry extends TarHeader {
  flag: string;
}

/** What pax extended headers and GNU long names before an entry say about it. */
export type Overrides = Record<string, string>;

/** The error for an archive that is not tar, or is damaged. */
export class TarFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TarFormatError";
  }
}

const TYPES: Partial<Record<string, EntryType>> = {
  "0": "file",
  "\0": "file",
  "7": "file",
  "5": "directory",
  "2": "symlink",
  "1": "hardlink",
};

const utf8 = new TextDecoder();

/** Bytes of zeros after `size` bytes of content, up to the next block boundary. */
export function paddingLength(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK;
}

/** An all-zero block: the end of the archive. */
export function isEndBlock(block: Uint8Array): boolean {
  return block.every((byte) => byte === 0);
}

/** Parses one 512-byte header block; throws `TarFormatError` when it is not one. */
export function parseHeader(block: Uint8Array): ReadEntry {
  const stored = parseNumber(block, 148, 8, "checksum");
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  if (stored !== sum) throw new TarFormatError("not a tar archive, or a damaged one (bad header)");
  const flag = String.fromCharCode(block[156]!);
  const base = cString(block.subarray(0, 100));
  // POSIX ustar ("ustar\0") only: old GNU headers ("ustar  ") keep other fields where the prefix goes.
  const prefix =
    ascii(block.subarray(257, 263)) === "ustar\0" ? cString(block.subarray(345, 500)) : "";
  return {
    name: prefix ? `${prefix}/${base}` : base,
    type: TYPES[flag] ?? "other",
    flag,
    mode: parseNumber(block, 100, 8, "mode"),
    size: parseNumber(block, 124, 12, "size"),
    mtime: parseNumber(block, 136, 12, "mtime"),
    linkname: cString(block.subarray(157, 257)),
  };
}

/** Headers whose content describes the entry after them rather than being one. */
export function isMetadata(flag: string): boolean {
  return flag === "x" || flag === "g" || flag === "L" || flag === "K";
}

/**
 * Adds what a metadata header's content says to `overrides`: pax records (`x`), a GNU long
 * name (`L`) or link target (`K`). A global pax header (`g`) is read past: nothing in it matters.
 */
export function addOverrides(flag: string, body: Uint8Array, overrides: Overrides): Overrides {
  if (flag === "x") return { ...overrides, ...parsePax(body) };
  if (flag === "L") return { ...overrides, path: cString(body) };
  if (flag === "K") return { ...overrides, linkpath: cString(body) };
  return overrides;
}

/** The entry as its metadata headers describe it: their path, link target, size and mtime win. */
export function withOverrides(header: ReadEntry, overrides: Overrides): ReadEntry {
  const entry = { ...header };
  if (overrides.path !== undefined) entry.name = overrides.path;
  if (overrides.linkpath !== undefined) entry.linkname = overrides.linkpath;
  if (overrides.size !== undefined) entry.size = parseDecimal(overrides.size, "size");
  if (overrides.mtime !== undefined) entry.mtime = Math.floor(Number(overrides.mtime));
  // Links carry no data whatever their size field says; other entries may (GNU dumpdirs).
  if (entry.type === "symlink" || entry.type === "hardlink") entry.size = 0;
  return entry;
}

/** An octal field (NUL or space terminated), or a GNU base-256 one (high bit set). */
function parseNumber(block: Uint8Array, offset: number, length: number, what: string): number {
  const field = block.subarray(offset, offset + length);
  if (field[0]! & 0x80) {
    if (field[0] === 0xff) throw new TarFormatError(`negative ${what} in a tar header`);
    let value = field[0]! & 0x7f;
    for (let i = 1; i < field.length; i++) value = value * 256 + field[i]!;
    if (!Number.isSafeInteger(value)) throw new TarFormatError(`${what} too large in a tar header`);
    return value;
  }
  const text = ascii(field)
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

/** A NUL-terminated UTF-8 field. */
function cString(bytes: Uint8Array): string {
  const end = bytes.indexOf(0);
  return utf8.decode(end === -1 ? bytes : bytes.subarray(0, end));
}

/** One character per byte: for the numeric and magic fields, which are ASCII. */
function ascii(bytes: Uint8Array): string {
  return String.fromCharCode(...bytes);
}

/** pax records: `<length> <key>=<value>\n`, the length counting the whole record. */
function parsePax(body: Uint8Array): Overrides {
  const out: Overrides = {};
  let at = 0;
  while (at < body.length) {
    const space = body.indexOf(0x20, at);
    if (space === -1) break;
    const length = Number(ascii(body.subarray(at, space)));
    if (!Number.isInteger(length) || length <= 0 || at + length > body.length) {
      throw new TarFormatError("bad pax header in the archive");
    }
    const record = utf8.decode(body.subarray(space + 1, at + length - 1)); // without the newline
    const equals = record.indexOf("=");
    if (equals > 0) out[record.slice(0, equals)] = record.slice(equals + 1);
    at += length;
  }
  return out;
}
