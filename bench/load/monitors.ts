import { execFileSync } from "node:child_process";
import { watch } from "node:fs";
import { fileURLToPath } from "node:url";
import type { RunningRelay } from "../../test/support/relay";

/** Samples the RSS of every process in the relay's group; `peak()` is the largest sum seen. */
export function sampleRss(relay: RunningRelay): {
  stop(): { peakMiB: number; workerdMiB: number };
} {
  let peakKiB = 0;
  let workerdKiB = 0;
  const sample = () => {
    let out = "";
    try {
      out = execFileSync("ps", ["-o", "rss=,comm=", "-g", String(relay.processGroup)], {
        encoding: "utf8",
      });
    } catch {
      return; // the group may be between processes; the next sample counts
    }
    let sum = 0;
    for (const line of out.split("\n")) {
      const [rss, comm] = line.trim().split(/\s+/);
      const kib = Number(rss);
      if (!Number.isFinite(kib)) continue;
      sum += kib;
      if (comm === "workerd") workerdKiB = Math.max(workerdKiB, kib);
    }
    peakKiB = Math.max(peakKiB, sum);
  };
  sample();
  const timer = setInterval(sample, 250);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { peakMiB: peakKiB / 1024, workerdMiB: workerdKiB / 1024 };
    },
  };
}

/** The checkout's sources, which a `wrangler dev` run from the checkout itself watches. */
const WATCHED = fileURLToPath(new URL("../../src", import.meta.url));

/**
 * Counts the seconds in which something under the checkout's src/ was written: each would have
 * reloaded a relay run from the checkout (and answered `503` to its requests in flight).
 */
export function countReloads(): { stop(): number } {
  const seconds = new Set<number>();
  const watcher = watch(WATCHED, { recursive: true }, () =>
    seconds.add(Math.floor(Date.now() / 1000)),
  );
  return {
    stop() {
      watcher.close();
      return seconds.size;
    },
  };
}
