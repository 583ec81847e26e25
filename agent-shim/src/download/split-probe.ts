import { PROBE, splitPays } from "./parallel-settings.js";

/**
 * Watches one stream's bytes as they go, from its first chunk on, for `PROBE` (bytes or time,
 * whichever comes first), then calls `split` once if `splitPays`, else `keep`: `remaining` is
 * what the transfer had left to move when the watch began. Decided once: a stream that ends before the
 * watch does was fast, and nothing more opens. Shared by ranged downloads (their first range)
 * and multipart uploads (their first part in flight).
 */
export function splitProbe(
  remaining: number,
  split: () => void,
  keep: () => void = () => {},
): (bytes: number) => void {
  let decided = false;
  let since: number | undefined;
  let bytes = 0;
  let moved = 0;
  return (length) => {
    if (decided) return;
    moved += length;
    const now = performance.now();
    if (since === undefined) {
      since = now;
      return;
    }
    bytes += length;
    const ms = now - since;
    if (bytes < PROBE.bytes && ms < PROBE.ms) return;
    decided = true;
    if (splitPays(bytes, ms, remaining - moved)) split();
    else keep();
  };
}
