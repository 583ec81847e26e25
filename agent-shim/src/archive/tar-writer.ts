/**
 * Writing tar headers: a ustar block per entry, preceded by a pax extended header (`x`) when the
 * name or link target does not fit ustar or the size exceeds its 8 GiB.
 */
import { BLOCK, padding, type EntryType, type TarHeader } from "./tar-format.js";

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
