import { Transform, type TransformCallback } from "node:stream";
import type * as Tty from "node:tty";
import { humanSize } from "../../../src/services/human-size.js";
import { currentCall } from "./tool-call.js";

/** At most ten redraws a second. */
const REDRAW_MS = 100;

/**
 * A one-line progress bar on stderr: name, percent, bytes and rate. It draws only when stderr is
 * a terminal, so logs and pipes never see it, and clears its line when done.
 */
export class Progress {
  /** Asked of fd 2, not `process.stderr`, which node makes on first use (about 1 ms for a pipe). */
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- only a command that draws loads node:tty
  private readonly enabled = (require("node:tty") as typeof Tty).isatty(2);
  /** Under an MCP tool call: where the call's progress notifications come from. */
  private readonly report = currentCall()?.progress;
  private started = Date.now();
  private lastDraw = 0;
  /** Bytes done before this run started moving any (the rate leaves them out). */
  private readonly held: number;

  /** `done`: bytes already there at the start, such as the parts of a resumed upload. */
  constructor(
    private readonly label: string,
    private readonly total: number,
    private done = 0,
  ) {
    this.held = done;
  }

  /** A pass-through stream that advances the bar by what flows through it. */
  meter(): Meter {
    return new Meter((bytes) => this.advance(bytes));
  }

  /** Starts again from zero, for a retried transfer. */
  reset(): void {
    this.done = 0;
    this.started = Date.now();
  }

  /** Takes back bytes that have to go again (one part's failed attempt, when others go on). */
  rewind(bytes: number): void {
    this.done -= bytes;
  }

  /** Clears the bar's line. */
  finish(): void {
    if (this.enabled && this.lastDraw > 0) process.stderr.write("\r\x1b[2K");
  }

  /** Advances the bar by `bytes` (for bytes that do not flow through a `meter()`). */
  advance(bytes: number): void {
    this.done += bytes;
    this.report?.(this.done, this.total, this.label);
    const now = Date.now();
    if (!this.enabled || now - this.lastDraw < REDRAW_MS) return;
    this.lastDraw = now;
    const percent = this.total > 0 ? Math.floor((this.done / this.total) * 100) : 100;
    const seconds = Math.max((now - this.started) / 1000, 0.001);
    const rate = Math.max(this.done - this.held, 0) / seconds;
    const stats = `${percent}%  ${humanSize(this.done)} / ${humanSize(this.total)}  ${humanSize(rate)}/s`;
    const room = (process.stderr.columns || 80) - stats.length - 3;
    const label =
      this.label.length > room ? this.label.slice(0, Math.max(room - 1, 0)) + "…" : this.label;
    process.stderr.write(`\r\x1b[2K${label}  ${stats}`);
  }
}

/** A pass-through stream that reports what flows through it, and counts it. */
export class Meter extends Transform {
  /** Bytes through so far. */
  bytes = 0;

  constructor(private readonly onBytes: (bytes: number) => void) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    this.onBytes(chunk.length);
    callback(null, chunk);
  }
}
