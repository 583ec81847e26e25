/** Units and number formats for the report's tables. */
import type { Row } from "./context";

export const MiB = 1024 * 1024;

/** 1 MiB, 16 MiB, 1 GiB, 12.3 MiB, 512 KiB… */
export function formatSize(bytes: number): string {
  if (bytes >= 1024 * MiB) return `${trim(bytes / (1024 * MiB))} GiB`;
  if (bytes >= MiB) return `${trim(bytes / MiB)} MiB`;
  if (bytes >= 1024) return `${trim(bytes / 1024)} KiB`;
  return `${bytes} B`;
}

/** 85 ms, 1.23 s, 71.0 s. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return ms < 10_000 ? `${(ms / 1000).toFixed(2)} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** Bytes with their share of the original size: `33.1 MiB (25.9 %)`. */
export function formatSent(bytes: number, size: number): string {
  if (!Number.isFinite(bytes)) return "—";
  return `${formatSize(bytes)} (${((bytes / size) * 100).toFixed(1)} %)`;
}

/** A wall-time ratio: `1.12×`. */
export function formatRatio(ratio: number): string {
  return Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : "—";
}

function trim(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

/** One result on one line, for progress logs. */
export function describeRow(row: Row): string {
  const sent = formatSent(row.bytesSent, row.size);
  return `${row.label} ${formatSize(row.size)}, ${row.tool}: ${formatMs(row.wallMs)}, ${sent}, ${formatRss(row.rssMiB)}`;
}

/** Peak RSS in MiB, or a dash for steps run inside the benchmark process. */
export function formatRss(mib: number): string {
  return Number.isFinite(mib) ? `${mib.toFixed(1)} MiB` : "—";
}
