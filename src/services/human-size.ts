/**
 * The one unit rule for sizes people read and type: binary units, powers of 1024, named as
 * such (KiB, MiB, GiB, TiB, PiB). Written once per language (this file for the relay, its
 * pages, the Node shim and the TypeScript SDK; one each in the Python shim, the Python SDK
 * and the POSIX shim), all checked against test/human-size-cases.json.
 */

const UNITS = ["KiB", "MiB", "GiB", "TiB", "PiB"];

/**
 * A byte count for people: `999 B`, `1.5 KiB`, `42 MiB`. One decimal below 10 of the unit,
 * whole numbers from 10 up (halves rounded up), the next unit once the number would reach 1024.
 */
export function humanSize(bytes: number): string {
  if (bytes < 1024) return `${Math.floor(bytes + 0.5)} B`;
  let value = bytes;
  for (let i = 0; ; i++) {
    value /= 1024;
    const tenths = Math.floor(value * 10 + 0.5);
    if (tenths < 100) return `${Math.floor(tenths / 10)}.${tenths % 10} ${UNITS[i]}`;
    const whole = Math.floor(value + 0.5);
    if (whole < 1024 || i === UNITS.length - 1) return `${whole} ${UNITS[i]}`;
  }
}

const FACTORS: Record<string, number> = {
  "": 1,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
  t: 1024 ** 4,
};

/**
 * A size people type (`--max-bytes 10M`): a whole number, optionally a unit K, M, G or T, read
 * as powers of 1024 however it is spelled (`10M`, `10 MiB`, `10mb` are all 10 MiB), or `B`.
 * Null unless it is a positive number of bytes below 2^53.
 */
export function parseSize(text: string): number | null {
  const match = /^([0-9]+) *(?:([kmgt])(?:i?b)?|b)?$/i.exec(text.trim());
  if (!match) return null;
  const value = Number(match[1]) * FACTORS[(match[2] ?? "").toLowerCase()]!;
  return Number.isSafeInteger(value) && value > 0 ? value : null;
}
