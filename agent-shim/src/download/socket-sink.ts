import { writeSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import type { BodySink } from "../transport/socket-body.js";

/** Where a body goes, as `drain` is given it (see there). */
export interface SinkTarget {
  file: FileHandle;
  position: number | null;
  take: (chunk: Buffer) => void;
  onWritten?: (buffers: Buffer[], at: number) => void;
}

/**
 * `drain` for a body taken off the socket (`socketBody`): each read is taken, then written
 * where it goes at once (synchronously: its buffer is the connection's, reused by the next
 * read), so all the bytes taken are on disk whenever the body fails. `wrap` turns a failed
 * write into the error `drain` rejects with.
 */
export function directSink(
  target: SinkTarget,
  wrap: (err: unknown) => Error,
  resolve: (written: number) => void,
  reject: (err: unknown) => void,
): BodySink {
  const { file, position, take, onWritten } = target;
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
        throw wrap(err);
      }
      written += chunk.length;
      onWritten?.([chunk], at ?? written - chunk.length);
    },
    end: () => resolve(written),
    fail: reject,
  };
}
