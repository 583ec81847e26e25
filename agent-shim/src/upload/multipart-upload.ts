import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import type { RetryPolicy } from "../cli/config.js";
import { CliError, fsError } from "../cli/errors.js";
import { readText, request, statusError } from "../transport/http.js";
import { PASS_CHUNK_BYTES, changedWhileSending } from "./prepare.js";
import { hashPart } from "./part-signer.js";
import { Progress } from "../cli/progress.js";
import { splitProbe } from "../download/split-probe.js";
import type { MultipartAnswer, PartUpload } from "../transport/relay-client.js";
import { withRetry } from "../transport/retry.js";
import { isRetryableStorageAnswer, uploadTarget } from "./upload.js";
import { partLength } from "../../../src/part-plan.js";

/** Stored bytes on disk to go up in parts, and how. */
export interface PartsJob {
  /** Where the stored bytes are. */
  path: string;
  storedSize: number;
  partSize: number;
  /**
   * The SHA-256 of each part, in order: what each part's PUT is signed with, which the store
   * checks; a part it refuses is hashed again here to tell a file changed under us.
   */
  partSha256: string[];
  /** The file's name, for messages and the progress bar. */
  label: string;
  policy: RetryPolicy;
  /** Parts in flight at once (at most, when `adaptive`). */
  concurrency: number;
  /**
   * One part's bytes at a time, the next part following as soon as they are read out, watched as
   * they go (`splitProbe`); `concurrency` stream at once only when the first runs slow with over
   * a second of sending left. Absent: `concurrency` at once from the start.
   */
  adaptive?: boolean;
}

/**
 * PUTs the parts `upload` lists as missing, up to `concurrency` at once, each streamed from disk
 * under its signed digest (the store checks it), each retried on its own. The first part to
 * fail for good stops the others and its error ends the upload. One progress bar covers all the
 * stored bytes, starting at those already held. Returns the bytes stored by this call.
 */
export async function putParts(upload: MultipartAnswer, job: PartsJob): Promise<number> {
  const missing = checkedParts(upload, job);
  const numbers = missing.map((part) => part.partNumber);
  return eachPart(numbers, job, (index, progress, signal, sent) =>
    putPart(missing[index]!, job, progress, signal, sent),
  );
}

/**
 * Runs `send` for each of the parts `numbers`, in order, up to `concurrency` at once; the first
 * to fail for good stops the others and its error ends the upload. With `adaptive`, one part's
 * bytes go at a time: the next part starts once they are all sent (`sent`), while the store
 * still checks and answers the last, so the parts follow each other as one stream would, with
 * up to `concurrency` awaiting their answers; all `concurrency` stream at once only when the
 * first shows that pays (`splitProbe`). One progress bar covers all the stored bytes, starting
 * at those already held. Returns the bytes stored by this call.
 */
export async function eachPart(
  numbers: number[],
  job: PartsJob,
  send: (index: number, progress: Progress, signal: AbortSignal, sent: () => void) => Promise<void>,
): Promise<number> {
  const lengths = numbers.map((n) => partLength(job.storedSize, job.partSize, n));
  const missingBytes = lengths.reduce((sum, length) => sum + length, 0);
  const most = Math.min(job.concurrency, numbers.length);
  const adaptive = job.adaptive === true && most > 1;
  const held = job.storedSize - missingBytes;
  let streams = adaptive ? 1 : most;
  const split = () => {
    streams = most;
    pump();
  };
  const progress = adaptive
    ? new WatchedProgress(job.label, job.storedSize, held, splitProbe(missingBytes, split))
    : new Progress(job.label, job.storedSize, held);
  const stop = new AbortController();
  let failure: { error: unknown } | undefined;
  let uploaded = 0;
  let next = 0;
  /** Parts whose bytes are still going, and parts not yet answered. */
  let streaming = 0;
  let unanswered = 0;
  const runs: Promise<void>[] = [];

  const launch = (index: number) => {
    let going = true;
    const sent = () => {
      if (!going) return;
      going = false;
      streaming--;
      pump();
    };
    streaming++;
    unanswered++;
    const run = send(index, progress, stop.signal, sent).then(
      () => {
        uploaded += lengths[index]!;
      },
      (error: unknown) => {
        if (!stop.signal.aborted) {
          failure = { error };
          stop.abort(error);
        }
      },
    );
    runs.push(
      run.finally(() => {
        unanswered--;
        // Its bytes never all went (it failed), or nobody said they had: its stream ends here.
        if (going) sent();
        else pump();
      }),
    );
  };
  function pump(): void {
    while (
      !stop.signal.aborted &&
      next < numbers.length &&
      streaming < streams &&
      unanswered < most
    ) {
      launch(next++);
    }
  }
  pump();
  try {
    for (let i = 0; i < runs.length; i++) await runs[i]; // More start while waiting.
  } finally {
    progress.finish();
  }
  if (failure) throw failure.error;
  return uploaded;
}

/** A progress bar that also tells `heard` of the bytes it is advanced by. */
class WatchedProgress extends Progress {
  constructor(
    label: string,
    total: number,
    done: number,
    private readonly heard: (bytes: number) => void,
  ) {
    super(label, total, done);
  }

  override advance(bytes: number): void {
    super.advance(bytes);
    this.heard(bytes);
  }
}

/** The missing parts, once the relay's plan is known to match ours; in order. */
function checkedParts(upload: MultipartAnswer, job: PartsJob): PartUpload[] {
  const count = job.partSha256.length;
  const mismatch = () =>
    new CliError(`relay planned the parts of ${job.label} differently than airlock did`);
  if (upload.partSize !== job.partSize || upload.partCount !== count) throw mismatch();
  const seen = new Set<number>();
  for (const { partNumber, put } of upload.parts) {
    const valid = Number.isInteger(partNumber) && partNumber >= 1 && partNumber <= count;
    if (!valid || seen.has(partNumber) || typeof put?.url !== "string") throw mismatch();
    seen.add(partNumber);
  }
  return [...upload.parts].sort((a, b) => a.partNumber - b.partNumber);
}

/**
 * PUTs one part with exactly its signed headers, retried per the policy until `signal` ends it.
 * The bytes are not hashed on their way out: the store checks them against the signed digest,
 * and only when it refuses them is the part read again, to name a file changed under us.
 */
export async function putPart(
  { partNumber, put }: PartUpload,
  job: PartsJob,
  progress: Progress,
  signal: AbortSignal,
  sent: () => void,
): Promise<void> {
  const { path, partSize, storedSize, label } = job;
  const count = job.partSha256.length;
  const start = (partNumber - 1) * partSize;
  const length = partLength(storedSize, partSize, partNumber);
  const which = `${label} (part ${partNumber} of ${count})`;
  const target = uploadTarget(put.url, `upload of ${which}`);
  await withRetry(
    job.policy,
    target,
    async () => {
      // A megabyte a read, as the hashing passes read: 16× fewer trips through the streams than
      // Node's 64 KiB (on 1 GiB a quarter of the shim's CPU, which the store wants on two cores).
      const chunk = { highWaterMark: PASS_CHUNK_BYTES };
      const input = createReadStream(path, { start, end: start + length - 1, ...chunk });
      const body = progress.meter();
      input.once("error", (err) => body.destroy(fsError("read", path, err)));
      // A file cut short under us (the store would wait for the rest of the signed length).
      input.once("end", () => {
        if (input.bytesRead !== length) body.destroy(changedWhileSending(label));
        else sent();
      });
      body.once("close", () => input.destroy());
      input.pipe(body);
      try {
        const res = await request({ ...put, body, signal });
        const text = await readText(res);
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) return;
        // The store refuses bytes that do not match the signed checksum: name the cause.
        if (status >= 400 && status < 500 && (await partChanged(job, partNumber))) {
          throw changedWhileSending(label);
        }
        throw statusError(
          res,
          text,
          `${target.service} refused upload of ${which}`,
          isRetryableStorageAnswer,
        );
      } catch (err) {
        body.destroy();
        progress.rewind(body.bytes); // This part goes again from its start, or not at all.
        throw err;
      }
    },
    signal,
  );
}

/** Whether part `n` on disk is gone, cut short, or no longer hashes to its signed digest. */
async function partChanged(job: PartsJob, n: number): Promise<boolean> {
  const handle = await open(job.path, "r").catch(() => undefined);
  if (!handle) return true;
  const { path, label: name, storedSize: size, partSize } = job;
  try {
    return (await hashPart({ handle, path, name, size, partSize }, n)) !== job.partSha256[n - 1];
  } catch {
    return true;
  } finally {
    await handle.close();
  }
}
