import type { BenchFile, Kind } from "./corpus";
import { median, type Meter } from "./measure";
import type { Session } from "./relay-api";

/** What every case needs: where to measure, which relay session, where temp files go. */
export interface Context {
  meter: Meter;
  session: Session;
  /** A session of a new owner scope on the same relay: it shares no dedup with `session`. */
  newScope(): Promise<Session>;
  tmpDir: string;
  log(message: string): void;
  /** Logs a problem with the run itself; the report lists every warning. */
  warn(message: string): void;
  /**
   * Called after every upload: the relay reads gzip and multipart uploads back after it
   * answers, and that work must not slow the next measurement (see send.bench.ts).
   * `keepRelay`: wait for the read-back however long it takes (the content must stay).
   */
  settle(
    sent: { size: number; sha256: string; deduped?: boolean },
    options?: { keepRelay?: boolean },
  ): Promise<void>;
}

/** One measured sample of a tool on one fresh variant of a file. */
export interface Sample {
  wallMs: number;
  /** NaN where the step ran inside the benchmark's own process. */
  rssMiB: number;
  /** NaN where nothing is sent (hashing, a request without a body). */
  bytesSent: number;
}

/** One table row: a tool on a case, summarised over its runs. */
export interface Row extends Sample {
  kind: Kind;
  size: number;
  /** What was sent, e.g. `random` or `text, AIRLOCK_GZIP_LEVEL=3`. */
  label: string;
  tool: string;
  runs: number;
}

export const contentType = (kind: Kind) =>
  kind === "text" ? "text/plain; charset=utf-8" : "application/octet-stream";

/** Median wall time and bytes over the runs; peak RSS is the largest seen. */
export function summarize(file: BenchFile, label: string, tool: string, samples: Sample[]): Row {
  return {
    kind: file.kind,
    size: file.size,
    label,
    tool,
    runs: samples.length,
    wallMs: median(samples.map((s) => s.wallMs)),
    rssMiB: Math.max(...samples.map((s) => s.rssMiB)),
    bytesSent: median(samples.map((s) => s.bytesSent)),
  };
}

/**
 * `wrangler dev` answers 503 while it reloads the Worker (after any edit of a source file it
 * watches, node_modules included). The shim retries that by itself; a curl or bookkeeping request
 * that got a 503 is reported as a warning and measured again on fresh content.
 */
export async function remeasureOn503<T>(
  ctx: Context,
  what: string,
  measure: () => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await measure();
    } catch (error) {
      if (attempt >= 3 || !/\b503\b/.test(String(error))) throw error;
      ctx.warn(`${what} got a 503 from wrangler dev (Worker reloading?); measured again`);
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }
}
