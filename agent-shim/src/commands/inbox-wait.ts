import { setTimeout as sleep } from "node:timers/promises";
import type { InboxItem, RelayClient } from "../transport/relay-client.js";

/** The first pause between two looks at the inbox; each pause after is longer, up to the last. */
const FIRST_PAUSE_MS = 1000;
const LAST_PAUSE_MS = 4000;
const PAUSE_GROWTH = 1.5;

/**
 * `pull --wait`: asks the relay for the inbox until it holds something, and returns those items;
 * with `timeoutSeconds`, gives up when that time has passed and returns undefined. Ctrl-C (or
 * SIGTERM) while waiting ends the process with one line, as it does elsewhere in the shim.
 */
export async function waitForInbox(
  relay: RelayClient,
  timeoutSeconds: number | undefined,
): Promise<InboxItem[] | undefined> {
  const deadline = timeoutSeconds === undefined ? Infinity : Date.now() + timeoutSeconds * 1000;
  const stopOnSignal = [interruptOn("SIGINT", 130), interruptOn("SIGTERM", 143)];
  try {
    for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * PAUSE_GROWTH, LAST_PAUSE_MS)) {
      const items = await relay.listInbox();
      if (items.length > 0) return items;
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await sleep(Math.min(pause, left));
    }
  } finally {
    for (const stop of stopOnSignal) stop();
  }
}

/** Exits on `signal` with one line and `code`; returns the function that removes the handler. */
function interruptOn(signal: NodeJS.Signals, code: number): () => void {
  const handler = () => {
    process.stderr.write(`airlock: interrupted (${signal})\n`);
    process.exit(code);
  };
  process.once(signal, handler);
  return () => process.removeListener(signal, handler);
}

/** A duration for a message: `45s`, `10m`, `1h30m`, `2d`. */
export function shownDuration(seconds: number): string {
  const units: [string, number][] = [
    ["d", 86400],
    ["h", 3600],
    ["m", 60],
    ["s", 1],
  ];
  let left = seconds;
  let text = "";
  for (const [unit, size] of units) {
    const amount = Math.floor(left / size);
    if (amount > 0) text += `${amount}${unit}`;
    left -= amount * size;
  }
  return text || "0s";
}
