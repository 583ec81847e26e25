import { crc32 } from "node:zlib";

/**
 * A streaming zip writer (APPNOTE 6.3.10) for answers whose length must be known before the
 * first byte: entries are *stored* (method 0, no compression), so the archive's exact length
 * follows from the names and sizes alone (`zipLength`) and the relay can send Content-Length
 * and charge a link for it up front; deflate's output length is only known once it is done.
 * Each entry's CRC-32 is computed as its bytes stream through and written after them in a data
 * descriptor (flag bit 3); ZIP64 records are used where a size, an offset or the entry count
 * passes what the classic fields hold. Names are UTF-8 (flag bit 11).
 */

/** One entry as the archive lists it: a file with `size` bytes, or a directory (`name/`). */
export interface ZipEntry {
  /** `/`-separated, relative, no trailing slash (a directory's is added). */
  name: string;
  size: number;
  directory: boolean;
}

/** For tests: ZIP64 records from this size or offset on (the format's own limit otherwise). */
export interface ZipOptions {
  zip64From?: number;
  /** The entries' modification time (DOS format, local = UTC). */
  modified?: Date;
}

const MAX32 = 0xffffffff;
const MAX16 = 0xffff;
const LOCAL = 30;
const CENTRAL = 46;
const END = 22;
const END64 = 56;
const LOCATOR64 = 20;
/** bit 3: sizes and CRC in a data descriptor; bit 11: the name is UTF-8. */
const FLAGS = 0x0808;
/** Made by: Unix (3), spec 6.3 (63): the external attributes carry Unix modes. */
const MADE_BY = (3 << 8) | 63;

const encoder = new TextEncoder();

interface Placed extends ZipEntry {
  nameBytes: Uint8Array;
  offset: number;
  /** The entry's own sizes need ZIP64 (its local header and descriptor carry 64-bit sizes). */
  large: boolean;
}

/** Where each entry starts, and where the central directory does. */
function place(entries: readonly ZipEntry[], zip64From: number) {
  const placed: Placed[] = [];
  let offset = 0;
  for (const entry of entries) {
    const nameBytes = encoder.encode(entry.directory ? `${entry.name}/` : entry.name);
    const large = entry.size >= zip64From;
    placed.push({ ...entry, nameBytes, offset, large });
    offset += LOCAL + nameBytes.byteLength + (large ? 20 : 0) + entry.size + (large ? 24 : 16);
  }
  const centralSize = placed.reduce(
    (total, entry) =>
      total + CENTRAL + entry.nameBytes.byteLength + centralExtraLength(entry, zip64From),
    0,
  );
  const end64 = placed.length >= MAX16 || offset >= zip64From || centralSize >= zip64From;
  return { placed, centralOffset: offset, centralSize, end64 };
}

/** The central record's ZIP64 extra field: the sizes (a large entry) and the offset, if far. */
function centralExtraLength(entry: Placed, zip64From: number): number {
  const fields = (entry.large ? 2 : 0) + (entry.offset >= zip64From ? 1 : 0);
  return fields === 0 ? 0 : 4 + 8 * fields;
}

/** The exact length of the zip `zipStream` writes for these entries. */
export function zipLength(entries: readonly ZipEntry[], options: ZipOptions = {}): number {
  const { centralOffset, centralSize, end64 } = place(entries, options.zip64From ?? MAX32);
  return centralOffset + centralSize + (end64 ? END64 + LOCATOR64 : 0) + END;
}

/**
 * The zip of `entries`, their contents read from `contents` in order (one stream per file,
 * exactly `size` bytes each; directories have none). Pulled: nothing is read ahead of what the
 * reader of the returned stream asks for, so memory stays one chunk whatever the sizes. A
 * content stream of the wrong length errors the zip.
 */
export function zipStream(
  entries: readonly ZipEntry[],
  contents: (entry: ZipEntry, index: number) => Promise<ReadableStream<Uint8Array>>,
  options: ZipOptions = {},
): ReadableStream<Uint8Array> {
  const zip64From = options.zip64From ?? MAX32;
  const layout = place(entries, zip64From);
  const { time, date } = dosTime(options.modified ?? new Date(0));
  const crcs: number[] = [];

  async function* parts(): AsyncGenerator<Uint8Array> {
    for (const [index, entry] of layout.placed.entries()) {
      yield localHeader(entry, time, date);
      let crc = 0;
      let seen = 0;
      if (!entry.directory && entry.size > 0) {
        const reader = (await contents(entry, index)).getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            seen += value.byteLength;
            if (seen > entry.size) throw new Error(`entry ${index} is longer than ${entry.size}`);
            crc = crc32(value, crc);
            yield value;
          }
        } finally {
          reader.releaseLock();
        }
      }
      if (seen !== entry.size) throw new Error(`entry ${index} ended at ${seen} of ${entry.size}`);
      crcs.push(crc);
      yield descriptor(entry, crc);
    }
    yield centralDirectory(layout, crcs, time, date, zip64From);
  }

  const iterator = parts();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await iterator.next();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      async cancel() {
        await iterator.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}

function localHeader(entry: Placed, time: number, date: number): Uint8Array {
  const extra = entry.large ? 20 : 0;
  const out = new Uint8Array(LOCAL + entry.nameBytes.byteLength + extra);
  const view = new DataView(out.buffer);
  view.setUint32(0, 0x04034b50, true);
  view.setUint16(4, entry.large ? 45 : 20, true);
  view.setUint16(6, FLAGS, true);
  view.setUint16(8, 0, true); // stored
  view.setUint16(10, time, true);
  view.setUint16(12, date, true);
  // CRC and sizes follow in the descriptor (bit 3): zero here, or the ZIP64 marker.
  view.setUint32(18, entry.large ? MAX32 : 0, true);
  view.setUint32(22, entry.large ? MAX32 : 0, true);
  view.setUint16(26, entry.nameBytes.byteLength, true);
  view.setUint16(28, extra, true);
  out.set(entry.nameBytes, LOCAL);
  if (entry.large) {
    // The ZIP64 extra with both sizes: zero, as bit 3 has them in the descriptor.
    view.setUint16(LOCAL + entry.nameBytes.byteLength, 0x0001, true);
    view.setUint16(LOCAL + entry.nameBytes.byteLength + 2, 16, true);
  }
  return out;
}

function descriptor(entry: Placed, crc: number): Uint8Array {
  const out = new Uint8Array(entry.large ? 24 : 16);
  const view = new DataView(out.buffer);
  view.setUint32(0, 0x08074b50, true);
  view.setUint32(4, crc, true);
  if (entry.large) {
    view.setBigUint64(8, BigInt(entry.size), true);
    view.setBigUint64(16, BigInt(entry.size), true);
  } else {
    view.setUint32(8, entry.size, true);
    view.setUint32(12, entry.size, true);
  }
  return out;
}

function centralDirectory(
  layout: ReturnType<typeof place>,
  crcs: number[],
  time: number,
  date: number,
  zip64From: number,
): Uint8Array {
  const { placed, centralOffset, centralSize, end64 } = layout;
  const out = new Uint8Array(centralSize + (end64 ? END64 + LOCATOR64 : 0) + END);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const [index, entry] of placed.entries()) {
    const far = entry.offset >= zip64From;
    const extra = centralExtraLength(entry, zip64From);
    view.setUint32(at, 0x02014b50, true);
    view.setUint16(at + 4, MADE_BY, true);
    view.setUint16(at + 6, entry.large || far ? 45 : 20, true);
    view.setUint16(at + 8, FLAGS, true);
    view.setUint16(at + 12, time, true);
    view.setUint16(at + 14, date, true);
    view.setUint32(at + 16, crcs[index]!, true);
    view.setUint32(at + 20, entry.large ? MAX32 : entry.size, true);
    view.setUint32(at + 24, entry.large ? MAX32 : entry.size, true);
    view.setUint16(at + 28, entry.nameBytes.byteLength, true);
    view.setUint16(at + 30, extra, true);
    // External attributes: the Unix mode in the high half, MS-DOS's directory bit in the low.
    const mode = entry.directory ? 0o40755 : 0o100644;
    view.setUint32(at + 38, ((mode << 16) | (entry.directory ? 0x10 : 0)) >>> 0, true);
    view.setUint32(at + 42, far ? MAX32 : entry.offset, true);
    out.set(entry.nameBytes, at + CENTRAL);
    at += CENTRAL + entry.nameBytes.byteLength;
    if (extra > 0) {
      view.setUint16(at, 0x0001, true);
      view.setUint16(at + 2, extra - 4, true);
      let field = at + 4;
      if (entry.large) {
        view.setBigUint64(field, BigInt(entry.size), true);
        view.setBigUint64(field + 8, BigInt(entry.size), true);
        field += 16;
      }
      if (far) view.setBigUint64(field, BigInt(entry.offset), true);
      at += extra;
    }
  }
  const count = placed.length;
  if (end64) {
    view.setUint32(at, 0x06064b50, true);
    view.setBigUint64(at + 4, BigInt(END64 - 12), true);
    view.setUint16(at + 12, MADE_BY, true);
    view.setUint16(at + 14, 45, true);
    view.setBigUint64(at + 24, BigInt(count), true);
    view.setBigUint64(at + 32, BigInt(count), true);
    view.setBigUint64(at + 40, BigInt(centralSize), true);
    view.setBigUint64(at + 48, BigInt(centralOffset), true);
    at += END64;
    view.setUint32(at, 0x07064b50, true);
    view.setBigUint64(at + 8, BigInt(centralOffset + centralSize), true);
    view.setUint32(at + 16, 1, true);
    at += LOCATOR64;
  }
  view.setUint32(at, 0x06054b50, true);
  view.setUint16(at + 8, end64 ? MAX16 : count, true);
  view.setUint16(at + 10, end64 ? MAX16 : count, true);
  view.setUint32(at + 12, end64 ? MAX32 : centralSize, true);
  view.setUint32(at + 16, end64 ? MAX32 : centralOffset, true);
  return out;
}

/** MS-DOS time and date fields (2-second precision, from 1980). */
function dosTime(when: Date): { time: number; date: number } {
  const year = Math.max(1980, Math.min(2107, when.getUTCFullYear()));
  return {
    time: (when.getUTCHours() << 11) | (when.getUTCMinutes() << 5) | (when.getUTCSeconds() >> 1),
    date: ((year - 1980) << 9) | ((when.getUTCMonth() + 1) << 5) | when.getUTCDate(),
  };
}
