import { UsageError } from "./errors.js";

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/**
 * Seconds in a duration written as `90s`, `10m`, `24h`, `7d`, `2w`, a sum such as `1h30m`,
 * or a bare number of seconds. `what` names the option in the usage error.
 */
export function parseDuration(text: string, what: string, usage: string): number {
  const trimmed = text.trim().toLowerCase();
  let seconds = 0;
  if (/^\d+$/.test(trimmed)) {
    seconds = Number(trimmed);
  } else if (/^(\d+[smhdw])+$/.test(trimmed)) {
    for (const [, amount, unit] of trimmed.matchAll(/(\d+)([smhdw])/g)) {
      seconds += Number(amount) * UNIT_SECONDS[unit!]!;
    }
  } else {
    throw new UsageError(
      `${what} ${text} is not a duration such as 90s, 10m, 24h or 7d; usage: ${usage}`,
    );
  }
  if (!Number.isSafeInteger(seconds) || seconds <= 0) {
    throw new UsageError(`${what} must be longer than 0 seconds; usage: ${usage}`);
  }
  return seconds;
}
