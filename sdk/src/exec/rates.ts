/**
 * Whether gzip pays on an exec channel, learnt from the transfers it made. A transfer's rate is
 * the file's own bytes a millisecond, end to end (so a gzip transfer's rate includes the time
 * to compress and inflate). Each adapter and direction keeps its fastest rate per encoding: its
 * capacity, where a slow transfer says more about the load at the time. Once both encodings
 * have been timed, `auto` picks the faster; with only the plain one timed, gzip is assumed to
 * manage about 60 MB/s (gzip -1 on a modest CPU), so a channel faster than that (a local
 * `docker exec` pipe, SSH on a fast link) sends the bytes as they are.
 */
import type { ExecAdapter } from "./exec.js";

export type Direction = "push" | "collect";
export type Encoding = "identity" | "gzip";

const GZIP_BYTES_PER_MS = 60_000;
const MEASURED_FROM_BYTES = 1024 * 1024;

const rates = new WeakMap<ExecAdapter, Map<`${Direction} ${Encoding}`, number>>();

/** Remembers that `bytes` of a file went over `exec` in `ms`, sent as `encoding`. */
export function recordRate(
  exec: ExecAdapter,
  direction: Direction,
  encoding: Encoding,
  bytes: number,
  ms: number,
): void {
  if (bytes < MEASURED_FROM_BYTES || !(ms > 0)) return;
  let known = rates.get(exec);
  if (!known) rates.set(exec, (known = new Map()));
  const key = `${direction} ${encoding}` as const;
  known.set(key, Math.max(known.get(key) ?? 0, bytes / ms));
}

/** Whether gzip may pay for a transfer in `direction` over `exec` (see the module). */
export function gzipMayPay(exec: ExecAdapter, direction: Direction): boolean {
  const known = rates.get(exec);
  const identity = known?.get(`${direction} identity`);
  if (identity === undefined) return true;
  return identity < (known?.get(`${direction} gzip`) ?? GZIP_BYTES_PER_MS);
}
