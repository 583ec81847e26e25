import { AppError } from "../errors";

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 } as const;

/**
 * Seconds in a duration as the shims' `--expires` takes it (and the tool definitions' pattern
 * allows): `90s`, `10m`, `24h`, `7d`, `2w`, a sum such as `1h30m`, or bare seconds.
 */
export function durationSeconds(text: string, what: string): number {
  const terms = /^\d+$/.test(text) ? [`${text}s`] : text.match(/\d+[smhdw]/g);
  if (!terms || terms.join("") !== text) {
    throw new AppError(
      "invalid_request",
      `${what}: ${text} is not a duration such as 90s, 10m, 24h or 7d`,
    );
  }
  const seconds = terms.reduce(
    (sum, term) =>
      sum + Number(term.slice(0, -1)) * UNIT_SECONDS[term.slice(-1) as keyof typeof UNIT_SECONDS],
    0,
  );
  if (!Number.isSafeInteger(seconds) || seconds <= 0) {
    throw new AppError("invalid_request", `${what}: must be longer than 0 seconds`);
  }
  return seconds;
}
