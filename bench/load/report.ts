/** The load bench's error list and the figures it prints. */

export const errors: string[] = [];
export const fail = (message: string) => {
  errors.push(message);
  if (errors.length <= 20) console.error(`error: ${message}`);
};

/** Percentile by nearest rank. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const fmt = (ms: number) =>
  ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
