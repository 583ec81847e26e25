/**
 * Sandbox → host over the exec channel: the sandbox prints one header line (size, encoding),
 * streams the bytes on stdout (gzip where it pays) while hashing them, and ends with their
 * SHA-256 on stderr. The host hashes what arrives; a stream that ends short, runs long or
 * hashes differently errors at its end, so whatever consumes it (an upload) is abandoned.
 */
import { createHash } from "node:crypto";
import { execError, type AirlockError } from "../errors.js";
import type { ExecAdapter, ExecExit } from "./exec.js";
import { execFailure, withHasher } from "./probe.js";
import { gzipMayPay, recordRate } from "./rates.js";
import { COLLECT_MAGIC, COLLECT_TRAILER, EXIT, collectScript } from "./sandbox-scripts.js";

/** Options for a collect from a sandbox. */
export interface CollectOptions {
  /**
   * `auto` (default): gzip when the first 64 KiB shrink by 10 % or more, the sandbox has a
   * gzip tool, and this adapter's earlier collects have not shown plain bytes to go faster
   * (a local pipe, a fast link: there gzip only costs time); `never`; `always`.
   */
  compress?: "auto" | "always" | "never";
}

/** A file coming out of a sandbox. */
export interface CollectedStream {
  /** The file's size, as the sandbox found it before sending. */
  size: number;
  /** How the bytes travelled. */
  transfer: "identity" | "gzip";
  /**
   * The file's original bytes. Errors at its end (`transfer_mismatch`, `exec_failed`) unless
   * exactly `size` bytes with `sha256` came and the sandbox's command succeeded.
   */
  stream: ReadableStream<Uint8Array>;
  /** The error `stream` ended with, if it did. */
  failure(): AirlockError | undefined;
  /** The bytes' SHA-256, checked against the sandbox's, once `stream` has ended intact. */
  sha256(): string | undefined;
}

const MAX_HEADER = 512;

/** Starts streaming the sandbox's file at `path` (see the module). */
export async function collectStream(
  exec: ExecAdapter,
  path: string,
  options: CollectOptions = {},
): Promise<CollectedStream> {
  checkCollectPath(path);
  const commands = await withHasher(exec);
  const compress = collectCompression(exec, options);
  const started = performance.now();
  const run = exec.run(
    ["sh", "-c", collectScript(commands), "airlock-collect", path, compress],
    null,
  );
  const reader = run.stdout.getReader();
  let buffered = new Uint8Array(0);
  let newline = -1;
  while (newline < 0 && buffered.byteLength <= MAX_HEADER) {
    const { done, value } = await reader.read();
    if (done) break;
    const joined = new Uint8Array(buffered.byteLength + value.byteLength);
    joined.set(buffered);
    joined.set(value, buffered.byteLength);
    buffered = joined;
    newline = buffered.indexOf(0x0a);
  }
  const header =
    newline < 0 ? "" : new TextDecoder().decode(buffered.subarray(0, newline)).trimEnd();
  const match = new RegExp(`^${COLLECT_MAGIC} (\\d+) (identity|gzip)$`).exec(header);
  if (!match) {
    await reader.cancel().catch(() => undefined);
    const exit = await run.exit;
    throw collectFailure(
      exec,
      path,
      exit.code === 0 ? { code: 0, stderr: "its answer did not start with the header" } : exit,
    );
  }
  const [, sizeText = ""] = match;
  const encoding = match[2] === "gzip" ? "gzip" : "identity";
  const size = Number(sizeText);
  let rest: Uint8Array | undefined = buffered.subarray(newline + 1);
  /** The bytes after the header line, as they come. */
  const next = async (): Promise<Uint8Array | undefined> => {
    if (rest) {
      const first = rest;
      rest = undefined;
      if (first.byteLength > 0) return first;
    }
    const { done, value } = await reader.read();
    if (done) return undefined;
    return value;
  };
  let failed: AirlockError | undefined;
  let verified: string | undefined;
  const mismatch = (message: string) => (failed = collectMismatch(exec, path, message));
  const read = encoding === "gzip" ? inflate(next, () => reader.cancel(), mismatch) : next;
  const hash = createHash("sha256");
  let received = 0;
  // The last chunk is held back until the end has been checked: a consumer (an upload of
  // exactly `size` bytes) then never sees the whole of what turned out to be wrong.
  let held: Uint8Array | undefined;
  const finish = async (): Promise<AirlockError | undefined> => {
    const exit = await run.exit;
    if (exit.code !== 0) return (failed = execFailure(exec, `collect of ${path}`, exit));
    const got = hash.digest("hex");
    const problem = receivedProblem(exit.stderr, size, { size: received, sha256: got });
    if (problem) return mismatch(problem);
    verified = got;
    recordRate(exec, "collect", encoding, size, performance.now() - started);
    return undefined;
  };
  const checked = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          const chunk = await read();
          if (!chunk) {
            const error = await finish();
            if (error) return controller.error(error);
            if (held) controller.enqueue(held);
            return controller.close();
          }
          received += chunk.byteLength;
          if (received > size)
            return controller.error(mismatch(`more than the ${size} bytes announced arrived`));
          hash.update(chunk);
          const ready = held;
          held = chunk;
          if (ready) return controller.enqueue(ready);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return {
    size,
    transfer: encoding,
    stream: checked,
    failure: () => failed,
    sha256: () => verified,
  };
}

export function checkCollectPath(path: string): void {
  if (typeof path !== "string" || path === "" || path.includes("\0"))
    throw new TypeError("Airlock: collect needs a sandbox path");
}

/** The COMPRESS argument of the collect script for these options on this adapter. */
export function collectCompression(
  exec: ExecAdapter,
  options: CollectOptions,
): "auto" | "always" | "never" {
  if (options.compress === "never" || options.compress === "always") return options.compress;
  return gzipMayPay(exec, "collect") ? "auto" : "never";
}

/** A collect command that failed (a file the sandbox could not read has its own code). */
export function collectFailure(exec: ExecAdapter, path: string, exit: ExecExit): AirlockError {
  const code = exit.code === EXIT.notFile ? "sandbox_file_unreadable" : "exec_failed";
  return execFailure(exec, `collect of ${path}`, exit, code);
}

export function collectMismatch(exec: ExecAdapter, path: string, message: string): AirlockError {
  return execError(
    "transfer_mismatch",
    `collect of ${path} from ${exec.label}: ${message}; nothing was kept`,
  );
}

/**
 * Why what arrived is not the file the sandbox read (its size from the header, its SHA-256
 * from the last line of stderr), or undefined when it is.
 */
export function receivedProblem(
  stderr: string,
  size: number,
  received: { size: number; sha256: string },
): string | undefined {
  const trailer = new RegExp(`${COLLECT_TRAILER} ([0-9a-f]{64})\\b[^\\n]*\\s*$`).exec(stderr);
  const sha256 = trailer?.[1] ?? "(none)";
  if (received.size === size && received.sha256 === sha256) return undefined;
  return `received ${received.size} bytes with SHA-256 ${received.sha256}, but the sandbox read ${size} bytes with SHA-256 ${sha256}`;
}

/** Inflates gzip; damaged compressed bytes end the stream with `mismatch`'s error. */
function inflate(
  next: () => Promise<Uint8Array | undefined>,
  cancel: () => Promise<void>,
  mismatch: (message: string) => AirlockError,
): () => Promise<Uint8Array | undefined> {
  const compressed = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const chunk = await next();
        if (chunk) controller.enqueue(chunk);
        else controller.close();
      },
      cancel,
    },
    { highWaterMark: 0 },
  );
  const reader = compressed
    .pipeThrough(new DecompressionStream("gzip") as TransformStream<Uint8Array, Uint8Array>)
    .getReader();
  return async () => {
    try {
      const { done, value } = await reader.read();
      return done ? undefined : value;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw mismatch(`the compressed bytes did not arrive intact (${reason})`);
    }
  };
}
