/**
 * Node-only file helpers: a file on disk as a streamed upload body, and a download
 * streamed to disk through a temp file, checked against the file record, then renamed (to a
 * path the caller chose, or to the file's cleaned name in a directory).
 * Only the `/node` entry imports this module; the core never touches `node:*`.
 */
import { createHash, randomBytes } from "node:crypto";
import { link, open, rename, rm, type FileHandle } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import { cleanFileName, fileNameProblem, numberedFileName, truncateUtf8 } from "../../src/names.js";
import { AirlockError } from "./errors.js";
import type { CallOptions } from "./http.js";
import { BatchWriter } from "./node-batch.js";
import { maybeRanges } from "./node-ranged.js";
import type { DownloadOptions, FileRecord } from "./types.js";

/** Bytes read per pull: memory stays at a few chunks whatever the file's size. */
const CHUNK_BYTES = 256 * 1024;

/** A file opened for upload: a pull-based stream of exactly `size` bytes. */
export interface FileSource {
  /** Reads the file as it is consumed (backpressure: nothing is read ahead of the reader). */
  stream: ReadableStream<Uint8Array>;
  /** The file's size when it was opened; the stream errors if the file turns out shorter. */
  size: number;
  /** The file's base name. */
  name: string;
  /** Closes the file if the stream was not read to its end. Safe to call more than once. */
  close(): Promise<void>;
}

/**
 * Opens a regular file for streaming upload. The size comes from the open handle
 * (`fstat`), and the stream yields exactly that many bytes, so `Content-Length` holds even
 * if the file grows meanwhile.
 */
export async function openFile(path: string): Promise<FileSource> {
  const handle = await open(path, "r");
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new TypeError(`Airlock: not a regular file: ${path}`);
    const size = stats.size;
    let position = 0;
    const stream = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          try {
            const want = Math.min(CHUNK_BYTES, size - position);
            if (want === 0) {
              await close();
              controller.close();
              return;
            }
            const chunk = new Uint8Array(want);
            const { bytesRead } = await handle.read(chunk, 0, want, position);
            if (bytesRead === 0)
              throw new Error(`Airlock: ${path} shrank while it was being uploaded`);
            position += bytesRead;
            controller.enqueue(bytesRead === want ? chunk : chunk.subarray(0, bytesRead));
          } catch (error) {
            await close().catch(() => undefined);
            controller.error(error);
          }
        },
        cancel: () => close(),
      },
      { highWaterMark: 0 },
    );
    return { stream, size, name: basename(path), close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}

/** What {@link downloadToFile} and {@link downloadToDir} need: either client (operator or session). */
export interface FileReader {
  getFile(fileId: string, options?: CallOptions): Promise<FileRecord>;
  download(fileId: string, options?: DownloadOptions): Promise<Response>;
}

/** A file record, and where {@link downloadToDir} wrote its bytes. */
export type DownloadedFile = FileRecord & { path: string };

/**
 * Streams a file's bytes to `path`: into a temp file next to it (`.<name>.<random>.airlock-part`,
 * the name cut to 100 bytes), hashing as it goes; then checks size and SHA-256 against the file
 * record, syncs and renames into place (replacing an existing file). On any failure the temp file is removed and
 * `path` is untouched; a mismatch is `AirlockError` `download_mismatch`.
 *
 * `path` is trusted as the caller's choice, so it must not look built from an unchecked name:
 * a `TypeError` refuses one whose file name breaks the name rule (control, bidi or invisible
 * characters, leading or trailing space, over 255 bytes) or that climbs back out of a directory
 * it names (`out/../../x`). For a name that came from the relay, use {@link downloadToDir}.
 */
export async function downloadToFile(
  files: FileReader,
  fileId: string,
  path: string,
  options: CallOptions = {},
): Promise<FileRecord> {
  refuseUncheckedPath(path);
  const record = await files.getFile(fileId, options);
  const target = resolve(path);
  const temp = tempNear(dirname(target), basename(target));
  await receive(files, record, temp, options);
  try {
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
  return record;
}

/**
 * Streams a file's bytes into `dir` under the file's own name, cleaned by the shared name rule
 * (the last path component only, no control, bidi or invisible characters, never empty or dots,
 * at most 255 bytes), so that no name the relay holds can write outside `dir`. Never replaces a
 * file: a taken name becomes `name (1).ext`, `name (2).ext`, ... Checked like
 * {@link downloadToFile}; returns the file record with the `path` written.
 */
export async function downloadToDir(
  files: FileReader,
  fileId: string,
  dir: string,
  options: CallOptions = {},
): Promise<DownloadedFile> {
  const record = await files.getFile(fileId, options);
  const directory = resolve(dir);
  const name = cleanFileName(record.name, "file");
  const temp = tempNear(directory, name);
  await receive(files, record, temp, options);
  try {
    return { ...record, path: await claimName(temp, directory, name) };
  } finally {
    await rm(temp, { force: true }).catch(() => undefined);
  }
}

/** A temp file's path beside `name` in `dir`; the name is cut so that the temp name stays short. */
export function tempNear(dir: string, name: string): string {
  return join(dir, `.${truncateUtf8(name, 100)}.${randomBytes(6).toString("hex")}.airlock-part`);
}

/**
 * Streams the file's bytes into a new file `temp` (a large one in parallel ranges: see
 * `maybeRanges`), checking size and SHA-256 against the record, and syncs it; on any failure
 * `temp` is removed.
 */
async function receive(
  files: FileReader,
  record: FileRecord,
  temp: string,
  options: CallOptions,
): Promise<void> {
  const { fileId } = record;
  let body: ReadableStream<Uint8Array> | null = null;
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, "wx+", 0o644); // Read too: ranges landing ahead are hashed back.
    const hash = createHash("sha256");
    let size = 0;
    const ranged = await maybeRanges(files.download.bind(files), record, handle, options);
    if (ranged === undefined) body = (await files.download(fileId, options)).body;
    if (body) {
      const reader = body.getReader();
      const writer = new BatchWriter(handle, 0);
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          hash.update(value);
          size += value.byteLength;
          await writer.push(value);
        }
        await writer.finish();
      } catch (error) {
        await reader.cancel().catch(() => undefined);
        await writer.settled(); // No write under way when the temp file is removed.
        throw error;
      }
    }
    if (ranged !== undefined) size = record.size;
    const sha256 = ranged ?? hash.digest("hex");
    if (size !== record.size || sha256 !== record.sha256) {
      throw new AirlockError({
        status: 0,
        code: "download_mismatch",
        message:
          `downloaded ${size} bytes with SHA-256 ${sha256}, but file ${fileId} is ` +
          `${record.size} bytes with SHA-256 ${record.sha256}; nothing was kept`,
      });
    }
    await handle.sync();
    await handle.close();
    handle = undefined;
  } catch (error) {
    if (!body?.locked) await body?.cancel().catch(() => undefined);
    await handle?.close().catch(() => undefined);
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
}

/** What `link` fails with where a file system has no hard links. */
const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EXDEV"]);

/**
 * Gives `temp` the first free name of `name`, `name (1)`, ... in `dir`, each claimed atomically
 * (a hard link, or an exclusive create that a rename then replaces): never replaces a file.
 */
async function claimName(temp: string, dir: string, name: string): Promise<string> {
  for (let n = 0; n <= 10_000; n++) {
    const path = join(dir, numberedFileName(name, n));
    try {
      try {
        await link(temp, path);
      } catch (error) {
        if (!NO_HARD_LINKS.has(codeOf(error))) throw error;
        await (await open(path, "wx")).close();
        await rename(temp, path).catch(async (renameError: unknown) => {
          await rm(path, { force: true });
          throw renameError;
        });
      }
      return path;
    } catch (error) {
      if (codeOf(error) !== "EEXIST") throw error;
    }
  }
  throw new Error(`Airlock: too many files named ${name} in ${dir}`);
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "";
}

/** See {@link downloadToFile}: a path that looks built from a name nobody checked. */
function refuseUncheckedPath(path: string): void {
  const parts = path.split(sep === "\\" ? /[\\/]/ : "/");
  const name = parts.at(-1) ?? "";
  const problem = name === "" ? null : fileNameProblem(name);
  if (problem !== null) {
    throw new TypeError(
      `Airlock: downloadToFile's file name ${problem}; for names from the relay, use downloadToDir`,
    );
  }
  let named = false;
  for (const part of parts) {
    if (part === "" || part === ".") continue;
    if (part !== "..") named = true;
    else if (named) {
      throw new TypeError(
        "Airlock: downloadToFile's path climbs out of a directory it names; " +
          "for names from the relay, use downloadToDir",
      );
    }
  }
}
