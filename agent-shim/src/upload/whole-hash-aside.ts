import { hashWhole } from "./hash-pass.js";
import { PASS_CHUNK_BYTES } from "./prepare.js";

/**
 * SHA-256 and size of a whole file, read on its own. Self-contained (it is handed `load` for
 * `require`) because a worker runs it from its source text.
 */
function hashOfFile(load: NodeJS.Require, path: string, chunkBytes: number) {
  const { createHash } = load("node:crypto") as typeof import("node:crypto");
  const fs = load("node:fs") as typeof import("node:fs");
  const chunk = Buffer.allocUnsafe(chunkBytes);
  const hash = createHash("sha256");
  const fd = fs.openSync(path, "r");
  let size = 0;
  try {
    for (let n; (n = fs.readSync(fd, chunk, 0, chunk.length, size)) > 0; size += n) {
      hash.update(chunk.subarray(0, n));
    }
  } finally {
    fs.closeSync(fd);
  }
  return { size, sha256: hash.digest("hex") };
}

const WORKER_SOURCE =
  'const w = require("node:worker_threads");\n' +
  `w.parentPort.postMessage((${hashOfFile.toString()})(require, w.workerData.path, w.workerData.chunk));`;

/** A whole-file hash under way on another thread; `stop` ends that thread if it is not wanted. */
export interface WholeHashAside {
  hashed: Promise<{ size: number; sha256: string }>;
  stop(): void;
}

/**
 * The whole file's SHA-256 on a worker thread, while this one sends its parts: on two cores the
 * hash costs the send no time of its own. Where the worker fails (it cannot start, or the file
 * cannot be read) it is taken here instead, which also names a read error as usual.
 */
export function hashWholeAside(path: string): WholeHashAside {
  let worker: import("node:worker_threads").Worker | undefined;
  let stopped = false;
  const here = () => hashWhole(path, PASS_CHUNK_BYTES);
  const onWorker = (threads: typeof import("node:worker_threads")) =>
    new Promise<{ size: number; sha256: string }>((resolve, reject) => {
      if (stopped) return reject(new Error("the hash thread was stopped"));
      try {
        const workerData = { path, chunk: PASS_CHUNK_BYTES };
        worker = new threads.Worker(WORKER_SOURCE, { eval: true, workerData });
      } catch {
        here().then(resolve, reject);
        return;
      }
      let answered = false;
      worker.once("message", (found: { size: number; sha256: string }) => {
        answered = true;
        resolve(found);
      });
      worker.once("error", () => {
        answered = true;
        here().then(resolve, reject);
      });
      worker.once("exit", () => {
        if (!answered) reject(new Error("the hash thread was stopped"));
      });
    });
  const hashed = import("node:worker_threads").then(onWorker, here);
  hashed.catch(() => undefined); // awaited later; a failure is reported there
  return {
    hashed,
    stop: () => {
      stopped = true;
      void worker?.terminate();
    },
  };
}
