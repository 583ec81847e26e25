/**
 * Node-only file helpers: a file on disk as a streamed upload body, and a download
 * streamed to disk through a temp file, checked against the file record, then renamed.
 * Only the `/node` entry imports this module; the core never touches `node:*`.
 */
import { createHash, randomBytes } from "node:crypto";
import { open, rename, rm, type FileHandle } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { AirlockError } from "./errors.js";
import type { CallOptions } from "./http.js";
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

/** What {@link downloadToFile} needs: either client (operator or session). */
export interface FileReader {
  getFile(fileId: string, options?: CallOptions): Promise<FileRecord>;
  download(fileId: string, options?: DownloadOptions): Promise<Response>;
}

/**
 * Streams a file's bytes to `path`: into a temp file next to it (`.<name>.<random>.airlock-part`),
 * hashing as it goes; then checks size and SHA-256 against the file record, syncs and renames
 * into place (replacing an existing file). On any failure the temp file is removed and
 * `path` is untouched; a mismatch is `AirlockError` `download_mismatch`.
 */
export async function downloadToFile(
  files: FileReader,
  fileId: string,
  path: string,
  options: CallOptions = {},
): Promise<FileRecord> {
  const record = await files.getFile(fileId, options);
  const target = resolve(path);
  const temp = join(
    dirname(target),
    `.${basename(target)}.${randomBytes(6).toString("hex")}.airlock-part`,
  );
  const response = await files.download(fileId, options);
  const body = response.body;
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, "wx", 0o644);
    const hash = createHash("sha256");
    let size = 0;
    if (body) {
      const reader = body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          hash.update(value);
          size += value.byteLength;
          await writeAll(handle, value);
        }
      } catch (error) {
        await reader.cancel().catch(() => undefined);
        throw error;
      }
    }
    const sha256 = hash.digest("hex");
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
    await rename(temp, target);
    return record;
  } catch (error) {
    if (!body?.locked) await body?.cancel().catch(() => undefined);
    await handle?.close().catch(() => undefined);
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
}

async function writeAll(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.byteLength) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.byteLength - offset);
    offset += bytesWritten;
  }
}
