import { randomBytes } from "node:crypto";
import { readdir } from "node:fs/promises";

/** Compressible log-like text of exactly `bytes` bytes, unique per call. */
export function logText(bytes: number): Buffer {
  const tag = randomBytes(8).toString("hex");
  const lines: string[] = [];
  for (let i = 0, total = 0; total < bytes; i++) {
    const line = `2026-11-21T12:00:${String(i % 60).padStart(2, "0")}Z ${tag} step ${i} ok\n`;
    lines.push(line);
    total += line.length;
  }
  return Buffer.from(lines.join("")).subarray(0, bytes);
}

/** The shim's temp files left in `dir` (its TMPDIR). */
export async function tempFilesIn(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.startsWith("airlock-"));
}
