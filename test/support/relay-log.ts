import { readFile } from "node:fs/promises";
import type { RunningRelay } from "./relay";

/** One structured line the relay logged (`src/log.ts`). */
export type LoggedEvent = Record<string, unknown> & { event: string };

/** Terminal colour codes (ESC [ … m). */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/** Every structured event in the relay's whole log so far. */
export async function loggedEvents(relay: Pick<RunningRelay, "logPath">): Promise<LoggedEvent[]> {
  const text = await readFile(relay.logPath, "utf8").catch(() => "");
  const events: LoggedEvent[] = [];
  for (const line of text.split("\n")) {
    // wrangler colours an error's line: the event is the JSON object within it.
    const plain = line.replace(ANSI, "");
    const start = plain.indexOf('{"level"');
    if (start < 0) continue;
    try {
      const parsed = JSON.parse(plain.slice(start, plain.lastIndexOf("}") + 1)) as LoggedEvent;
      if (typeof parsed.event === "string") events.push(parsed);
    } catch {
      // a line wrangler cut or framed: not one of the relay's events
    }
  }
  return events;
}

/**
 * Waits until the relay has logged `count` events named `event` whose fields include `fields`:
 * the positive sign that background work ran (a fetch failed, a replay was recognised), so a
 * test can then check what it did not do. Throws, naming the log, after `timeoutMs`.
 */
export async function waitForEvents(
  relay: Pick<RunningRelay, "logPath">,
  event: string,
  fields: Record<string, unknown>,
  count = 1,
  timeoutMs = 60_000,
): Promise<LoggedEvent[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = (await loggedEvents(relay)).filter(
      (e) => e.event === event && Object.entries(fields).every(([k, v]) => e[k] === v),
    );
    if (found.length >= count) return found;
    if (Date.now() > deadline)
      throw new Error(
        `the relay logged ${found.length} of ${count} ${event} events with ${JSON.stringify(fields)} (log: ${relay.logPath})`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
