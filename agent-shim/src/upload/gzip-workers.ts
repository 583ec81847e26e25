import * as os from "node:os";
import type { Worker } from "node:worker_threads";
import { UsageError } from "../cli/errors.js";
import { GZIP_MEMBER_OPTIONS, OneTripGzip } from "./gzip-one-trip.js";

/** Members a stream of unknown length gzips before it starts worker threads (16 MiB at 1 MiB). */
export const WORKERS_AFTER_MEMBERS = 16;
/** The most worker threads one compressor starts. */
const MAX_WORKERS = 8;

/**
 * A worker's whole program: gzip each span it is sent, answer with the member (in memory of its
 * own, handed over rather than copied). Kept as source text so the shim stays one file.
 */
const WORKER_SCRIPT = `
const { parentPort, workerData } = require("node:worker_threads");
const { gzipSync } = require("node:zlib");
parentPort.on("message", (span) => {
  try {
    const member = gzipSync(span, { ...workerData.options, level: workerData.level });
    const own = new Uint8Array(member.length);
    own.set(member);
    parentPort.postMessage({ member: own }, [own.buffer]);
  } catch (err) {
    parentPort.postMessage({ error: String((err && err.message) || err) });
  }
});
`;

interface Job {
  span: Buffer;
  resolve: (member: Buffer) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  job: Job | undefined;
}

/** What a worker answers: the member, or why gzip failed. */
type Answer = { member: Uint8Array } | { error: string };

/** The cores this process may use. */
export function coreCount(): number {
  const { availableParallelism } = os as { availableParallelism?: () => number };
  return availableParallelism ? availableParallelism() : Math.max(1, os.cpus().length);
}

/**
 * Threads to compress on: `AIRLOCK_GZIP_THREADS` (1-64; a container whose CPU quota is below
 * the cores it sees can say so, and benchmarks compare one thread with all) over the cores this
 * process may use, at most 8.
 */
export function gzipThreads(env: Record<string, string | undefined> = process.env): number {
  const raw = env.AIRLOCK_GZIP_THREADS?.trim();
  if (!raw) return Math.min(MAX_WORKERS, coreCount());
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 64) {
    throw new UsageError(`AIRLOCK_GZIP_THREADS must be an integer from 1 to 64, not ${raw}`);
  }
  return value;
}

/** `AIRLOCK_GZIP_WORKERS=1`: compress on worker threads rather than on libuv's pool. */
export function workersWanted(env: Record<string, string | undefined> = process.env): boolean {
  return env.AIRLOCK_GZIP_WORKERS?.trim() === "1";
}

/** The threads libuv runs asynchronous zlib (and file system calls) on. */
function libuvPoolSize(): number {
  const size = Number(process.env.UV_THREADPOOL_SIZE);
  return Number.isInteger(size) && size > 0 ? size : 4;
}

/** How a `MemberCompressor` works; each has its default. */
export interface CompressorOptions {
  /** Worker threads (default: only with `AIRLOCK_GZIP_WORKERS=1`). */
  workers?: boolean;
  /** Threads to compress on (default `gzipThreads()`). */
  threads?: number;
  /** The workers' program (tests give one that fails). */
  script?: string;
}

/**
 * Gzips spans into members, several at once, each on a core of its own. By default on Node's
 * asynchronous zlib, which runs on libuv's thread pool: off the main thread, on every core
 * (up to the pool's four threads), with no start-up cost and no memory beyond the members in
 * flight. Worker threads (`workers`) do the same at about 30 MiB of resident memory each (a
 * V8 isolate apiece), which puts a send over its memory budget: measured, not the default.
 * They start lazily (at once for a file known to be large, after `WORKERS_AFTER_MEMBERS`
 * members for a stream, never on one thread); if one cannot start or dies, every member not yet
 * made, the lost one's too, is gzipped on libuv's pool instead.
 */
export class MemberCompressor {
  /** Members worth having under way at once: enough to keep every thread busy, no more. */
  readonly inFlight: number;
  private readonly threads: number;
  private readonly workers: boolean;
  private readonly script: string;
  private slots: Slot[] | undefined;
  private starting: Promise<void> | undefined;
  private readonly queue: Job[] = [];
  private broken = false;
  private closed = false;
  private members = 0;
  /** Asynchronous zlib on libuv's pool, one trip per member. */
  private readonly pool: OneTripGzip;

  constructor(
    private readonly level: number,
    private readonly knownLarge: boolean,
    options: CompressorOptions = {},
  ) {
    const { workers = workersWanted(), threads = gzipThreads(), script = WORKER_SCRIPT } = options;
    this.threads = threads;
    this.workers = workers && threads > 1;
    this.script = script;
    this.pool = new OneTripGzip(level);
    // One thread: one member at a time. On libuv's pool, one more than the threads (one is
    // queued while another is written), leaving the pool room for file reads where it can.
    const pool = Math.max(2, Math.min(threads + 1, libuvPoolSize()));
    this.inFlight = threads === 1 ? 1 : this.workers ? threads * 2 : pool;
  }

  /** The gzip member of `span`, a buffer the caller no longer writes to. */
  gzip(span: Buffer): Promise<Buffer> {
    this.members += 1;
    if (!this.useWorkers()) return this.pool.gzip(span);
    // node:worker_threads is loaded only here: a send that never starts workers never pays for it.
    this.starting ??= import("node:worker_threads").then(
      ({ Worker }) => this.start(Worker),
      () => this.fallBack(),
    );
    return this.starting.then(() => {
      if (this.broken || this.closed) return this.pool.gzip(span);
      return new Promise<Buffer>((resolve, reject) => {
        this.queue.push({ span, resolve, reject });
        this.dispatch();
      });
    });
  }

  /** Whether worker threads were started and are working (for tests and benchmarks). */
  get usingWorkers(): boolean {
    return this.slots !== undefined && !this.broken;
  }

  /** Stops the workers; members still under way are abandoned. */
  close(): void {
    this.closed = true;
    for (const { worker } of this.slots ?? []) void worker.terminate();
  }

  private useWorkers(): boolean {
    if (!this.workers || this.broken || this.closed) return false;
    return this.starting !== undefined || this.knownLarge || this.members > WORKERS_AFTER_MEMBERS;
  }

  private start(Worker: typeof import("node:worker_threads").Worker): void {
    if (this.closed) return;
    this.slots = [];
    for (let i = 0; i < this.threads; i++) {
      let worker: Worker;
      try {
        worker = new Worker(this.script, {
          eval: true,
          workerData: { level: this.level, options: GZIP_MEMBER_OPTIONS },
        });
      } catch {
        this.fallBack();
        return;
      }
      // What keeps the process alive only while it holds a member (then its answer is awaited).
      worker.unref();
      const slot: Slot = { worker, job: undefined };
      worker.on("message", (answer: Answer) => this.answered(slot, answer));
      worker.on("error", () => this.fallBack());
      worker.on("exit", () => this.fallBack());
      this.slots.push(slot);
    }
  }

  private dispatch(): void {
    for (const slot of this.slots ?? []) {
      if (slot.job) continue;
      const job = this.queue.shift();
      if (!job) return;
      slot.job = job;
      slot.worker.ref();
      // Copied, not handed over: if the worker is lost, the span is still here to gzip again.
      slot.worker.postMessage(job.span);
    }
  }

  private answered(slot: Slot, answer: Answer): void {
    const job = slot.job;
    slot.job = undefined;
    slot.worker.unref();
    if (!job) return;
    if ("member" in answer) {
      const { member } = answer;
      job.resolve(Buffer.from(member.buffer, member.byteOffset, member.length));
    } else {
      job.reject(new Error(`gzip failed: ${answer.error}`));
    }
    this.dispatch();
  }

  /** A worker failed to start or died: every member not yet gzipped is gzipped inline. */
  private fallBack(): void {
    if (this.closed || this.broken) return;
    this.broken = true;
    const orphans = [...(this.slots ?? []).flatMap((s) => (s.job ? [s.job] : [])), ...this.queue];
    this.queue.length = 0;
    for (const slot of this.slots ?? []) {
      slot.job = undefined;
      void slot.worker.terminate();
    }
    for (const job of orphans) {
      this.pool.gzip(job.span).then(job.resolve, job.reject);
    }
  }
}
