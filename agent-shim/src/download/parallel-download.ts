import type { IncomingMessage } from "node:http";
import { open, type FileHandle } from "node:fs/promises";
import type { RetryPolicy } from "../cli/config.js";
import { CliError, NetworkError, errorCode, fsError } from "../cli/errors.js";
import { Progress } from "../cli/progress.js";
import { withRetry } from "../transport/retry.js";
import { etagSha256, refusal } from "./download-headers.js";
import type { DownloadSource } from "./download.js";
import { drain, SinkWriteError } from "./body-sink.js";
import { OrderedHash } from "./ordered-hash.js";
import { NextRange, rangeRequest } from "./range-request.js";
import { forgetRanges, planPieces, recordPiece, type Piece } from "./parallel-pieces.js";
import { defaultChunk, type ParallelSettings } from "./parallel-settings.js";
import { splitProbe } from "./split-probe.js";

/** A download the relay said it serves in ranges, of a size and SHA-256 known up front. */
export interface RangedJob {
  source: DownloadSource;
  /** The part file the bytes go to (resumable when it is the named one). */
  partPath: string;
  size: number;
  sha256: string;
  settings: ParallelSettings;
  policy: RetryPolicy;
  /** The file's name on the progress bar. */
  label: string;
  /** The error for bytes that do not hash to `sha256`. */
  corrupt: () => CliError;
}

/**
 * Fetches a file in byte ranges over up to `settings.streams` connections at once, each range
 * written at its place in the part file and recorded beside it once whole (a killed run resumes
 * with the ranges not recorded), while the whole file's SHA-256 is computed in order as the bytes
 * land. Every range goes to the same URL as a single-stream download with `Range` and `If-Range`:
 * the relay answers it itself (r2, gzip stored, a share link with a byte budget, which counts
 * each range it sends) or with a redirect to a presigned GET of that range (s3). A retried range
 * asks only for the bytes it is missing. With `settings.adaptive` a fresh download starts with its
 * first range on one stream, and only when that range shows more streams pay (`splitPays`) is the
 * rest cut into ranges for them all; otherwise the rest is one more range on the same stream.
 * Ranges never overlap, so a capped link counts each byte once. Resolves once the part file holds
 * the verified file; on failure the caller removes the part file, and this its list of ranges.
 */
export async function rangedDownload(job: RangedJob): Promise<void> {
  const { partPath, size } = job;
  const { streams: count, chunk: knob } = job.settings;
  const chunk = knob ?? defaultChunk(size, count);
  const planned = await planPieces(partPath, size, chunk);
  const held = planned.reduce((sum, piece) => sum + piece.got, 0);
  const adaptive = job.settings.adaptive && held === 0 && chunk < size;
  // Adaptive: the first range, then the rest as one until the first range says otherwise.
  const pieces = adaptive ? firstAndRest(size, chunk) : planned;
  const file = await openPart(partPath, held === 0);
  const progress = new Progress(job.label, size, held);
  const active = new Set<IncomingMessage>();
  let failure: unknown;
  let wake = () => {};
  const fail = (err: unknown) => {
    failure ??= err;
    for (const res of active) res.destroy();
    wake();
  };
  const stopped = () => failure !== undefined;
  const hash = new OrderedHash(file, pieces);
  const grew = (piece: Piece, buffers: Buffer[], at: number) => {
    for (const buffer of buffers) {
      hash.landed(buffer, at);
      at += buffer.length;
      piece.got += buffer.length;
      progress.advance(buffer.length);
    }
    wake();
  };
  const missing = pieces.filter((piece) => piece.got < piece.end - piece.start);
  let nextPiece = 0;
  const stream = async () => {
    while (!stopped() && nextPiece < missing.length) {
      const piece = missing[nextPiece++]!;
      await withRetry(job.policy, job.source.target, () =>
        fetchPiece(job, piece, file, active, grew, probe, next),
      );
      if (stopped()) return;
      await recordPiece(partPath, piece);
    }
  };
  const runs: Array<Promise<void>> = [];
  const start = (streams: number) => {
    for (let i = 0; i < streams; i++) runs.push(stream().catch(fail));
  };
  // Adaptive and kept on one stream: the rest is asked for while the first range still arrives.
  const next = new NextRange(job.source, job.sha256);
  const probe = adaptive
    ? watchFirst(
        pieces[0]!,
        size,
        () => {
          // The rest, not yet begun (the one stream is still on the first range), cut for them all.
          const rest = planRest(pieces[0]!.end, size, chunk);
          pieces.splice(1, pieces.length - 1, ...rest);
          missing.splice(nextPiece, missing.length - nextPiece, ...rest);
          start(Math.min(count - 1, rest.length));
        },
        () => next.send(pieces[1]!),
      )
    : undefined;
  start(adaptive ? 1 : Math.min(count, missing.length));
  const progressed = () => new Promise<void>((resolve) => (wake = resolve));
  const digest = hash.digest(progressed, stopped).catch((err: unknown) => {
    fail(fsError("read", partPath, err));
    return undefined;
  });
  try {
    for (let i = 0; i < runs.length; i++) await runs[i]; // More may start while waiting.
    const sha256 = await digest;
    if (failure !== undefined) throw failure;
    if (sha256 !== job.sha256) throw job.corrupt();
  } catch (err) {
    await forgetRanges(partPath);
    throw err;
  } finally {
    next.drop();
    progress.finish();
    await file.close();
  }
  await forgetRanges(partPath);
}

/** A fresh download's first range, `chunk` bytes, and the rest of the file as one more. */
function firstAndRest(size: number, chunk: number): Piece[] {
  return [
    { start: 0, end: chunk, got: 0 },
    { start: chunk, end: size, got: 0 },
  ];
}

/** `[from, size)` in `chunk`-byte ranges. */
function planRest(from: number, size: number, chunk: number): Piece[] {
  const pieces: Piece[] = [];
  for (let at = from; at < size; at += chunk) {
    pieces.push({ start: at, end: Math.min(at + chunk, size), got: 0 });
  }
  return pieces;
}

/** Hears the bytes that arrive for a range (before they are written). */
type Probe = (piece: Piece, bytes: number) => void;

/**
 * Watches the first range's bytes as they arrive, from its first chunk on, for `PROBE` (bytes
 * or time, whichever comes first), then calls `split` once if `splitPays`, else `keep`. Decided
 * once: a first range that ends before the watch does was fast, and the rest stays one range.
 */
function watchFirst(first: Piece, size: number, split: () => void, keep: () => void): Probe {
  const heard = splitProbe(size, split, keep);
  return (piece, length) => {
    if (piece === first) heard(length);
  };
}

/** The part file, opened for writes at any offset; emptied when none of its bytes are kept. */
async function openPart(path: string, empty: boolean): Promise<FileHandle> {
  try {
    const file = await open(path, "r+").catch((err: unknown) => {
      if (errorCode(err) === "ENOENT") return open(path, "w+");
      throw err;
    });
    if (empty) await file.truncate(0);
    return file;
  } catch (err) {
    throw fsError("write", path, err);
  }
}

/**
 * One attempt at the bytes `piece` is missing: a ranged GET (following a redirect to the store),
 * its answer checked to be exactly that range of this file, its body written in place.
 */
async function fetchPiece(
  job: RangedJob,
  piece: Piece,
  file: FileHandle,
  active: Set<IncomingMessage>,
  grew: (piece: Piece, buffers: Buffer[], at: number) => void,
  probe: Probe | undefined,
  next: NextRange,
): Promise<void> {
  const first = piece.start + piece.got;
  const last = piece.end - 1;
  const res = await (next.take(piece) ?? rangeRequest(job.source, job.sha256, piece));
  active.add(res);
  try {
    await checkAnswer(res, job, first, last);
    let room = piece.end - first;
    const take = (chunk: Buffer) => {
      if (chunk.length > room) throw rangeError(job, "more bytes than the range asked for");
      room -= chunk.length;
      probe?.(piece, chunk.length);
    };
    await drain(res, file, first, take, (buffers, at) => grew(piece, buffers, at));
  } catch (err) {
    res.destroy();
    if (err instanceof CliError) throw err;
    if (err instanceof SinkWriteError) throw fsError("write", job.partPath, err.cause);
    throw new NetworkError(err);
  } finally {
    active.delete(res);
  }
  if (piece.got < piece.end - piece.start) {
    // The answer ended short of its Content-Length: the connection broke off (retried).
    throw new NetworkError(
      Object.assign(new Error("the range ended early"), { code: "ECONNRESET" }),
    );
  }
}

/** Refuses any answer but a 206 of exactly bytes `first`-`last` of this file. */
async function checkAnswer(
  res: IncomingMessage,
  job: RangedJob,
  first: number,
  last: number,
): Promise<void> {
  if (res.statusCode === 200) {
    throw rangeError(job, "the whole file came back for a byte range", WholeAnswer);
  }
  if (res.statusCode !== 206) throw await refusal(res, job.source);
  const etag = etagSha256(res);
  if (etag !== undefined && etag !== job.sha256) {
    const { action } = job.source.target;
    throw new CliError(`the ${action} is corrupt: its ETag does not match the expected SHA-256`);
  }
  const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers["content-range"] ?? "");
  const exact =
    range !== null &&
    Number(range[1]) === first &&
    Number(range[2]) === last &&
    Number(range[3]) === job.size;
  if (!exact) throw rangeError(job, `answered bytes ${first}-${last} with another range`);
}

/** The relay answered a range with the whole file: it serves this file only whole. */
export class WholeAnswer extends CliError {}

function rangeError(
  job: RangedJob,
  what: string,
  kind: new (message: string) => CliError = CliError,
): CliError {
  const { service, action } = job.source.target;
  return new kind(
    `${service} ${what} during the ${action}; AIRLOCK_DOWNLOAD_STREAMS=1 downloads in one stream`,
  );
}
