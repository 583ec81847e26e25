import { Transform, type TransformCallback } from "node:stream";
import { humanSize } from "./human-size.js";

/** At most ten redraws a second. */
const REDRAW_MS = 100;

/**
 * A one-line progress bar on stderr: name, percent, bytes and rate. It draws only when stderr is
 * a terminal, so logs and pipes never see it, and clears its line when done.
 */
export class Progress {
  private readonly enabled = process.stderr.isTTY === true;
  private done = 0;
  private started = Date.now();
  private lastDraw = 0;

  constructor(
    private readonly label: string,
    private readonly total: number,
  ) {}

  /** A pass-through stream that advances the bar by what flows through it. */
  meter(): Transform {
    return new Transform({
      transform: (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) => {
        this.advance(chunk.length);
        callback(null, chunk);
      },
    });
  }

  /** Starts again from zero, for a retried transfer. */
  reset(): void {
    this.done = 0;
    this.started = Date.now();
  }

  /** Clears the bar's line. */
  finish(): void {
    if (this.enabled && this.lastDraw > 0) process.stderr.write("\r\x1b[2K");
  }

  private advance(bytes: number): void {
    this.done += bytes;
    const now = Date.now();
    if (!this.enabled || now - this.lastDraw < REDRAW_MS) return;
    this.lastDraw = now;
    const percent = this.total > 0 ? Math.floor((this.done / this.total) * 100) : 100;
    const seconds = Math.max((now - this.started) / 1000, 0.001);
    const stats = `${percent}%  ${humanSize(this.done)} / ${humanSize(this.total)}  ${humanSize(this.done / seconds)}/s`;
    const room = (process.stderr.columns || 80) - stats.length - 3;
    const label =
      this.label.length > room ? this.label.slice(0, Math.max(room - 1, 0)) + "…" : this.label;
    process.stderr.write(`\r\x1b[2K${label}  ${stats}`);
  }
}
