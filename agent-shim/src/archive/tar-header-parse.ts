/**
 * Parsing tar headers: ustar blocks (with GNU base-256 numbers), pax extended header records and
 * NUL-terminated name fields.
 */
import { BLOCK, TarFormatError, type EntryType, type TarHeader } from "./tar-format.js";

/** A header the reader found, with any pax or GNU long-name overrides applied. */
export interface ReadEntry extends TarHeader {
  /** The raw type flag, for messages about entries that are skipped. */
  flag: string;
}

export function parseHeader(block: Buffer): ReadEntry {
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

export function parseDecimal(text: string, what: string): number {
  if (!/^\d+$/.test(text)) throw new TarFormatError(`bad ${what} in a pax header`);
  return Number(text);
}

export function cString(bytes: Buffer): string {
  const end = bytes.indexOf(0);
  return bytes.subarray(0, end === -1 ? bytes.length : end).toString("utf8");
}

export function parsePax(body: Buffer): Record<string, string> {
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
