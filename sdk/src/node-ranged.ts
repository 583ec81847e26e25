/**
 * Node-only: a large file downloaded in parallel byte ranges into an open temp file, its
 * SHA-256 computed in order as the ranges land (the shim's `OrderedHash`). Settings come from
 * the same environment variables as the shim's: `AIRLOCK_DOWNLOAD_STREAMS` (1 turns it off),
 * `AIRLOCK_PARALLEL_THRESHOLD`, `AIRLOCK_DOWNLOAD_CHUNK`.
 */
import type { FileHandle } from "node:fs/promises";
import { OrderedHash, type Landing } from "../../agent-shim/src/download/ordered-hash.js";
import { defaultChunk } from "../../agent-shim/src/download/parallel-settings.js";
import type { CallOptions } from "./http.js";
import { BatchWriter } from "./node-batch.js";
import type { DownloadOptions, FileRecord } from "./types.js";

/** How a large download is split. */
export interface RangeSettings {
  streams: number;
  threshold: number;
  /** Bytes per range; undefined: the shim's `defaultChunk` of the file's size. */
  chunk: number | undefined;
}

/** Attempts per range: a range cut off mid-way asks again for the bytes it is missing. */
const ATTEMPTS = 3;

/** The shim's defaults (4 streams, from 16 MiB, ranges by `defaultChunk`), or the environment's. */
export function rangeSettings(
  env: Record<string, string | undefined> = process.env,
): RangeSettings {
  const read = (name: string, fallback: number, min: number) => {
    const value = Number(env[name]?.trim() || fallback);
    if (!Number.isSafeInteger(value) || value < min)
      throw new TypeError(`Airlock: ${name} must be an integer of at least ${min}`);
    return value;
  };
  return {
    streams: Math.min(read("AIRLOCK_DOWNLOAD_STREAMS", 4, 1), 16),
    threshold: read("AIRLOCK_PARALLEL_THRESHOLD", 16 * 1024 * 1024, 1),
    chunk: env.AIRLOCK_DOWNLOAD_CHUNK?.trim()
      ? read("AIRLOCK_DOWNLOAD_CHUNK", 0, 64 * 1024)
      : undefined,
  };
}

/** The relay answered a range with the whole file (an untabled gzip file far in): go whole. */
export class WholeOnly extends Error {}

/** An answer that is not the range asked for: not retried. */
class Refused extends Error {
  constructor(message: string) {
    super(`Airlock: ${message}`);
  }
}

/**
 * `record`'s SHA-256 as downloaded in ranges into `handle` when it is large enough (see
 * `receiveRanges`); undefined when it is not, or the relay serves it only whole (`handle` is
 * then emptied for a single stream).
 */
export async function maybeRanges(
  download: (fileId: string, options: DownloadOptions) => Promise<Response>,
  record: FileRecord,
  handle: FileHandle,
  options: CallOptions,
): Promise<string | undefined> {
  const settings = rangeSettings();
  if (settings.streams < 2 || record.size < settings.threshold) return undefined;
  try {
    return await receiveRanges(download, record, handle, settings, options);
  } catch (error) {
    if (!(error instanceof WholeOnly)) throw error;
    await handle.truncate(0);
    return undefined;
  }
}

/**
 * Fetches `record`'s bytes into `handle` in ranges of `settings.chunk` over `settings.streams`
 * requests at once; returns their SHA-256 (the caller compares it with the record's). Throws
 * `WholeOnly` when the relay serves this file only whole.
 */
export async function receiveRanges(
  download: (fileId: string, options: DownloadOptions) => Promise<Response>,
  record: FileRecord,
  handle: FileHandle,
  settings: RangeSettings,
  options: CallOptions,
): Promise<string> {
  const pieces: Landing[] = [];
  const chunk = settings.chunk ?? defaultChunk(record.size, settings.streams);
  for (let at = 0; at < record.size; at += chunk)
    pieces.push({ start: at, end: Math.min(at + chunk, record.size), got: 0 });
  const hash = new OrderedHash(handle, pieces);
  const abort = new AbortController();
  const outer = options.signal;
  outer?.addEventListener("abort", () => abort.abort(outer.reason), { once: true });
  const { signal } = abort;
  let failure: unknown;
  let wake = () => {};
  let next = 0;
  const fetchPiece = async (piece: Landing) => {
    for (let tries = 1; ; tries++) {
      const first = piece.start + piece.got;
      const range = { start: first, end: piece.end - 1 };
      const response = await download(record.fileId, { range, signal });
      if (response.status !== 206) {
        await response.body?.cancel().catch(() => undefined);
        throw new WholeOnly(
          `the relay answered bytes ${first}-${range.end} with ${response.status}`,
        );
      }
      const exact = `bytes ${first}-${range.end}/${record.size}`;
      if (response.headers.get("content-range") !== exact)
        throw new Refused(`the relay answered bytes ${first}-${range.end} with another range`);
      // Each batch is hashed (when the hash has reached it) and counted once it is on disk.
      const writer = new BatchWriter(handle, first, (buffers, at) => {
        for (const bytes of buffers) {
          hash.landed(bytes, at);
          at += bytes.length;
          piece.got += bytes.length;
        }
        wake();
      });
      let room = piece.end - first;
      try {
        const reader = response.body?.getReader();
        for (;;) {
          const { done, value: chunk } = reader ? await reader.read() : { done: true as const };
          if (done) break;
          if (chunk.byteLength > room)
            throw new Refused("the relay sent more bytes than the range asked for");
          room -= chunk.byteLength;
          await writer.push(chunk);
        }
        await writer.finish();
        if (piece.start + piece.got === piece.end) return;
      } catch (error) {
        // What arrived before a cut is good: on disk, so the retry asks only for the rest.
        if (error instanceof Refused) await writer.settled();
        else await writer.finish().catch(() => undefined);
        if (signal.aborted || tries >= ATTEMPTS || error instanceof Refused) throw error;
        continue;
      }
      if (tries >= ATTEMPTS) throw new Error("Airlock: a range of the download kept ending early");
    }
  };
  const stream = async () => {
    while (failure === undefined && next < pieces.length) await fetchPiece(pieces[next++]!);
  };
  const streams = Array.from({ length: Math.min(settings.streams, pieces.length) }, () =>
    stream().catch((error: unknown) => {
      failure ??= error;
      abort.abort();
      wake();
    }),
  );
  const progressed = () => new Promise<void>((resolve) => (wake = resolve));
  const digest = hash.digest(progressed, () => failure !== undefined);
  await Promise.all(streams);
  const sha256 = await digest.catch((error: unknown) => {
    failure ??= error;
    return undefined;
  });
  if (failure !== undefined || sha256 === undefined) throw failure;
  return sha256;
}
