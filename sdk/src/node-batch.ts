/**
 * Node-only: a download's chunks written to its file in batches, as the shim's download sink
 * does: about 1 MiB per `writev`, the next batch gathering while one is written, so the reader
 * never waits on the disk for each chunk (a fetch body yields chunks of 16-64 KiB). Memory stays
 * at two batches.
 */
import type { FileHandle } from "node:fs/promises";

/** Bytes gathered before one `writev`. */
const BATCH_BYTES = 1024 * 1024;

export class BatchWriter {
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** The batch being written; rejects with its write's error. */
  private writing: Promise<void> = Promise.resolve();

  /**
   * Writes at `position` on in `handle`; `onWritten` hears of each batch once it is on disk,
   * with the position it went to.
   */
  constructor(
    private readonly handle: FileHandle,
    private position: number,
    private readonly onWritten?: (buffers: Buffer[], at: number) => void,
  ) {}

  /**
   * Takes a chunk (kept until written: not to be reused). Resolves at once, unless a full batch
   * must wait for the one under way; rejects when an earlier write failed.
   */
  async push(chunk: Uint8Array): Promise<void> {
    this.held.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    this.heldBytes += chunk.byteLength;
    if (this.heldBytes < BATCH_BYTES) return;
    await this.writing;
    this.write();
  }

  /** Writes what is held; resolves once every byte pushed is on disk. */
  async finish(): Promise<void> {
    await this.writing;
    if (this.heldBytes > 0) this.write();
    await this.writing;
  }

  /** Waits until no write is under way (its failure too), so that a retry does not race it. */
  async settled(): Promise<void> {
    await this.writing.catch(() => undefined);
  }

  private write(): void {
    const buffers = this.held;
    const at = this.position;
    this.position += this.heldBytes;
    this.held = [];
    this.heldBytes = 0;
    this.writing = writevAll(this.handle, buffers, at).then(() => this.onWritten?.(buffers, at));
    this.writing.catch(() => undefined); // Awaited by the next push or finish.
  }
}

async function writevAll(handle: FileHandle, buffers: Buffer[], at: number): Promise<void> {
  const rest = [...buffers];
  while (rest.length > 0) {
    let { bytesWritten } = await handle.writev(rest, at);
    if (bytesWritten === 0) throw new Error("Airlock: the file took no bytes");
    at += bytesWritten;
    // A short write: go on from the first byte not written.
    while (rest.length > 0 && bytesWritten >= rest[0]!.length) bytesWritten -= rest.shift()!.length;
    if (rest.length > 0 && bytesWritten > 0) rest[0] = rest[0]!.subarray(bytesWritten);
  }
}
