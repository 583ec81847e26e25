const UNITS = ["KB", "MB", "GB", "TB"];

/** A byte count for people: `512 B`, `42 KB`, `1.5 MB` (powers of 1000, like the relay's messages). */
export function humanSize(bytes: number): string {
  if (bytes < 1000) return `${Math.round(bytes)} B`;
  let value = bytes;
  let unit = "B";
  for (const next of UNITS) {
    if (value < 1000) break;
    value /= 1000;
    unit = next;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${unit}`;
}
