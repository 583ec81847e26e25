import { writeSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import type { FileHandle } from "node:fs/promises";
import { finished } from "node:stream";
import { socketBody, type BodySink } from "../transport/socket-body.js";

/** Bytes gathered before one `writev`: few thread-pool round trips, little held in memory. */
const BATCH_BYTES = 1024 * 1024;
/** Bytes held while a write is under way before the response is paused. */
const MAX_HELD_BYTES = 8 * BATCH_BYTES;

/** Where `drain` failed: the response (the connection) or the file. */
export class SinkWriteError extends Error {
  constructor(override readonly cause: unknown) {
    super("write failed", { cause });
  }
}

/**
 * Writes a response's body into `file` from `position` (null: at the end of a file opened for
 * appending), calling `take` on each chunk before it is written (to hash, count and show it;
 * what it throws ends the transfer and is rethrown). One `data` listener and `writev` of about
 * 1 MiB at a time, not a pipeline of streams per chunk: on loopback the per-chunk stream
 * machinery cost more CPU than the hash. Memory stays flat: the response is paused while
 * 8 MiB wait on a write. Resolves with the bytes written once the body ended and all of them
 * are on disk; a write's failure rejects with `SinkWriteError`, the connection's with its own
 * error (one cut off before its end with `finished`'s), once no write is under way. `onWritten` hears of each batch once
 * it is on disk, with the position it went to (for a file opened to append: the bytes before it
 * that this call wrote). A body taken off the socket (`socketBody`) is written read by read.
 */
export function drain(
  res: IncomingMessage,
  file: FileHandle,
  position: number | null,
  take: (chunk: Buffer) => void,
  onWritten?: (buffers: Buffer[], at: number) => void,
): Promise<number> {
  const direct = socketBody(res);
  return new Promise((resolve, reject) => {
    if (direct !== undefined) {
      return direct.attach(directSink(file, position, take, onWritten, resolve, reject));
    }
    let held: Buffer[] = [];
    let heldBytes = 0;
    let written = 0;
    let writing: Promise<void> | undefined;
    let ended = false;
    let failed = false;
    // Settles only once no write is under way: a retry must not race this call's last write.
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      res.destroy();
      const pending = writing;
      if (pending === undefined) reject(err);
      else void pending.finally(() => reject(err));
    };
    /** Writes what is held at its place; a failed write throws `SinkWriteError`. */
    const writeHeld = async () => {
      const buffers = held;
      const bytes = heldBytes;
      const at = position === null ? undefined : position + written;
      held = [];
      heldBytes = 0;
      try {
        const { bytesWritten } = await file.writev(buffers, at);
        if (bytesWritten !== bytes) throw new Error(`wrote ${bytesWritten} of ${bytes} bytes`);
      } catch (err) {
        throw new SinkWriteError(err);
      }
      written += bytes;
      onWritten?.(buffers, at ?? written - bytes);
    };
    const flush = () => {
      writing = (async () => {
        try {
          await writeHeld();
        } catch (err) {
          return fail(err);
        }
        writing = undefined;
        if (failed) return;
        if (heldBytes >= BATCH_BYTES || (ended && heldBytes > 0)) return flush();
        if (ended) return resolve(written);
        if (res.isPaused()) res.resume();
      })();
    };
    res.on("data", (chunk: Buffer) => {
      if (failed) return;
      try {
        take(chunk);
      } catch (err) {
        return fail(err);
      }
      held.push(chunk);
      heldBytes += chunk.length;
      if (writing === undefined && heldBytes >= BATCH_BYTES) flush();
      else if (heldBytes >= MAX_HELD_BYTES) res.pause();
    });
    // A connection cut: the bytes already taken are good, so they reach the file before this
    // settles (a resume then starts where the connection stopped, not up to a batch before).
    const cut = (err: unknown) => {
      if (failed) return;
      failed = true;
      void (writing ?? Promise.resolve())
        .then(() => (heldBytes > 0 ? writeHeld() : undefined))
        .catch(() => {})
        .finally(() => reject(err));
    };
    // `finished` also settles for a response that ended, failed or was cut off before this was
    // called (the caller may await other things between the response's head and here).
    finished(res, (err) => {
      if (err) return cut(err);
      ended = true;
      if (failed || writing !== undefined) return;
      if (heldBytes > 0) flush();
      else resolve(written);
    });
  });
}

/**
 * `drain` for a body taken off the socket (`socketBody`): each read is taken, then written
 * where it goes at once (synchronously: its buffer is the connection's, reused by the next
 * read), so all the bytes taken are on disk whenever the body fails.
 */
function directSink(
  file: FileHandle,
  position: number | null,
  take: (chunk: Buffer) => void,
  onWritten: ((buffers: Buffer[], at: number) => void) | undefined,
  resolve: (written: number) => void,
  reject: (err: unknown) => void,
): BodySink {
  let written = 0;
  return {
    bytes(chunk) {
      take(chunk);
      const at = position === null ? null : position + written;
      try {
        for (let done = 0; done < chunk.length;) {
          const place = at === null ? null : at + done;
          done += writeSync(file.fd, chunk, done, chunk.length - done, place);
        }
      } catch (err) {
        throw new SinkWriteError(err);
      }
      written += chunk.length;
      onWritten?.([chunk], at ?? written - chunk.length);
    },
    end: () => resolve(written),
    fail: reject,
  };
}
