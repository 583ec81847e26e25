import { appendFile, readFile, rm, stat } from "node:fs/promises";
import { errorCode, fsError } from "../cli/errors.js";
import type { Landing } from "./ordered-hash.js";

/** One byte range of a ranged download: `[start, end)`, of which the first `got` are on disk. */
export type Piece = Landing;

/**
 * Beside a ranged download's part file: one `<start> <end>` line per range whose bytes are all
 * on disk. A killed run leaves both behind; the next run fetches only the ranges not listed.
 * A part file without one was left by a single-stream run: its bytes are the file's start.
 */
export function rangesPath(partPath: string): string {
  return `${partPath}.ranges`;
}

/**
 * The ranges of a `size`-byte file, in order: those a part file left by an earlier run already
 * holds (complete), then the rest cut into `chunk`-byte pieces.
 */
export async function planPieces(partPath: string, size: number, chunk: number): Promise<Piece[]> {
  const held = await heldRanges(partPath, size);
  const pieces: Piece[] = [];
  let at = 0;
  const missing = (end: number) => {
    for (; at < end; at = Math.min(at + chunk, end)) {
      pieces.push({ start: at, end: Math.min(at + chunk, end), got: 0 });
    }
  };
  for (const [start, end] of held) {
    missing(start);
    pieces.push({ start, end, got: end - start });
    at = end;
  }
  missing(size);
  return pieces;
}

/** Records that a piece's bytes are all on disk. */
export async function recordPiece(partPath: string, piece: Piece): Promise<void> {
  await appendFile(rangesPath(partPath), `${piece.start} ${piece.end}\n`).catch((err: unknown) => {
    throw fsError("write", rangesPath(partPath), err);
  });
}

/** Forgets which ranges a part file holds (a single-stream run must not append to it). */
export async function forgetRanges(partPath: string): Promise<boolean> {
  const had = await stat(rangesPath(partPath)).then(
    () => true,
    () => false,
  );
  if (had) await rm(rangesPath(partPath), { force: true });
  return had;
}

/**
 * The ranges already on disk, sorted and disjoint: from the `.ranges` file when there is one
 * (lines that do not parse, overlap or pass `size` or the part file's end void it all), else the prefix a single-stream
 * run left (none when the part file is longer than this file).
 */
async function heldRanges(partPath: string, size: number): Promise<Array<[number, number]>> {
  const text = await readFile(rangesPath(partPath), "utf8").catch((err: unknown) => {
    if (errorCode(err) === "ENOENT") return undefined;
    throw fsError("read", rangesPath(partPath), err);
  });
  const length = await stat(partPath).then(
    (s) => s.size,
    () => 0,
  );
  if (text === undefined) return length > 0 && length <= size ? [[0, length]] : [];
  const ranges: Array<[number, number]> = [];
  for (const line of text.split("\n")) {
    const match = /^(\d+) (\d+)$/.exec(line);
    if (match) ranges.push([Number(match[1]), Number(match[2])]);
    else if (line !== "") return [];
  }
  ranges.sort((a, b) => a[0] - b[0]);
  for (let i = 0; i < ranges.length; i++) {
    const [start, end] = ranges[i]!;
    const previousEnd = i === 0 ? 0 : ranges[i - 1]![1];
    if (start < previousEnd || end <= start || end > Math.min(size, length)) return [];
  }
  return ranges;
}
