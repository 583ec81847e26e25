import { createReadStream, createWriteStream, lstatSync, readFileSync, type Stats } from "node:fs";
import { readdir, readlink, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { DigestStream } from "../upload/digest.js";
import { CliError, fsError } from "../cli/errors.js";
import { safeFileName } from "../download/file-names.js";
import { warn } from "../cli/output.js";
import { changedWhileSending, type StoredBytes } from "../upload/prepare.js";
import { padding } from "./tar-format.js";
import { END_OF_ARCHIVE, encodeHeader } from "./tar-writer.js";
import { releaseTemp, tempPath } from "../upload/temp-files.js";

/** The content type of a `.tar.gz`. */
export const ARCHIVE_TYPE = "application/gzip";

/** A directory packed into a `.tar.gz` temp file, ready to upload as it is. */
export interface Archive extends StoredBytes {
  /** `<dir>.tar.gz`. */
  name: string;
  /** Regular files in it. */
  files: number;
}

/**
 * Packs a directory into `<dir>.tar.gz` in the OS temp directory, streaming: the tree is walked
 * in sorted order and each file's bytes flow through the tar writer and gzip straight to disk.
 * Entries are named `<dir>/...`; regular files, directories and symlinks (stored as links, never
 * followed) keep their permission bits and mtimes; owners are not kept; anything else (sockets,
 * FIFOs, devices) is skipped with a warning. The same tree always makes the same bytes.
 */
export async function archiveDirectory(dir: string, level: number): Promise<Archive> {
  const top = safeFileName(basename(resolve(dir)), "archive");
  const temp = tempPath(tmpdir(), "airlock-", ".tar.gz");
  const digest = new DigestStream();
  const count = { files: 0 };
  try {
    const out = createWriteStream(temp, { flags: "wx", mode: 0o600 });
    const tar = Readable.from(batched(tarStream(dir, top, count)), { objectMode: false });
    await pipeline(tar, createGzip({ level }), digest, out).catch((err: unknown) => {
      throw err instanceof CliError ? err : fsError("write temp file", temp, err);
    });
  } catch (err) {
    await releaseTemp(temp);
    throw err;
  }
  return {
    name: `${top}.tar.gz`,
    files: count.files,
    encoding: "identity",
    path: temp,
    storedSize: digest.bytes,
    storedSha256: digest.hex(),
    dispose: () => releaseTemp(temp),
  };
}

async function* tarStream(
  dir: string,
  top: string,
  count: { files: number },
): AsyncGenerator<Buffer> {
  const info = await stat(dir).catch((err: unknown) => {
    throw fsError("read", dir, err);
  });
  yield encodeHeader({ ...meta(info), name: top, type: "directory" });
  yield* walk(dir, top, count);
  yield END_OF_ARCHIVE;
}

function meta(info: Stats) {
  return {
    mode: info.mode & 0o7777,
    mtime: Math.floor(info.mtimeMs / 1000),
    size: 0,
    linkname: "",
  };
}

/** Byte order of the UTF-8 names, as `LC_ALL=C sort` has it. */
function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

async function* walk(
  dir: string,
  prefix: string,
  count: { files: number },
): AsyncGenerator<Buffer> {
  const names = await readdir(dir).catch((err: unknown) => {
    throw fsError("read", dir, err);
  });
  for (const name of names.sort(byBytes)) {
    const path = join(dir, name);
    const entryName = `${prefix}/${name}`;
    const info = lstatOrFail(path);
    if (info.isDirectory()) {
      yield encodeHeader({ ...meta(info), name: entryName, type: "directory" });
      yield* walk(path, entryName, count);
    } else if (info.isSymbolicLink()) {
      const target = await readlink(path).catch((err: unknown) => {
        throw fsError("read", path, err);
      });
      yield encodeHeader({ ...meta(info), name: entryName, type: "symlink", linkname: target });
    } else if (info.isFile()) {
      yield encodeHeader({ ...meta(info), name: entryName, type: "file", size: info.size });
      yield* fileBytes(path, info.size);
      yield padding(info.size);
      count.files++;
    } else {
      warn(`skipped ${path}: ${kindOf(info)} cannot be archived`);
    }
  }
}

/** lstat without an async round trip: a walk of many small files is bound by those. */
function lstatOrFail(path: string): Stats {
  try {
    return lstatSync(path);
  } catch (err) {
    throw fsError("read", path, err);
  }
}

function kindOf(info: Stats): string {
  if (info.isSocket()) return "a socket";
  if (info.isFIFO()) return "a FIFO";
  if (info.isBlockDevice() || info.isCharacterDevice()) return "a device";
  return "a special file";
}

/** Files up to this size are read in one call: per-file async round trips cost more than the I/O. */
const SMALL_FILE_BYTES = 256 * 1024;
/** gzip is fed in chunks of about this size rather than one small header or file at a time. */
const BATCH_BYTES = 64 * 1024;

/** Joins the many small pieces of a tar stream into chunks of about `BATCH_BYTES`. */
async function* batched(pieces: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let held: Buffer[] = [];
  let heldBytes = 0;
  for await (const piece of pieces) {
    held.push(piece);
    heldBytes += piece.length;
    if (heldBytes >= BATCH_BYTES) {
      yield Buffer.concat(held, heldBytes);
      held = [];
      heldBytes = 0;
    }
  }
  if (heldBytes > 0) yield Buffer.concat(held, heldBytes);
}

/** Exactly `size` bytes of the file, as its header promised; a file that shrank is an error. */
async function* fileBytes(path: string, size: number): AsyncGenerator<Buffer> {
  if (size === 0) return;
  if (size <= SMALL_FILE_BYTES) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch (err) {
      throw fsError("read", path, err);
    }
    if (bytes.length < size) throw changedWhileSending(path);
    yield bytes.subarray(0, size);
    return;
  }
  let sent = 0;
  const input = createReadStream(path, { start: 0, end: size - 1 });
  try {
    for await (const chunk of input) {
      sent += (chunk as Buffer).length;
      yield chunk as Buffer;
    }
  } catch (err) {
    throw fsError("read", path, err);
  } finally {
    input.destroy();
  }
  if (sent !== size) throw changedWhileSending(path);
}
