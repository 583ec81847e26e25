/**
 * Relay → sandbox over the exec channel: the bytes stream through the command's stdin (gzip
 * where it pays and the sandbox can inflate), land in a temp file beside the target, are
 * checked by SHA-256 inside the sandbox, and only then renamed into place.
 */
import { randomBytes } from "node:crypto";
import { Readable, pipeline } from "node:stream";
import { createGzip, deflateRawSync } from "node:zlib";
import { execError, type AirlockError, type ExecErrorCode } from "../errors.js";
import type { ExecAdapter, ExecExit } from "./exec.js";
import { execFailure, runSmall, withHasher } from "./probe.js";
import { gzipMayPay, recordRate } from "./rates.js";
import {
  EXIT,
  chunkScript,
  chunkedFinishScript,
  chunkedOpenScript,
  pushScript,
  type SandboxCommands,
} from "./sandbox-scripts.js";

/** Options for a push into a sandbox. */
export interface PushOptions {
  /** Leave the file read-only (mode 0444), e.g. configuration the agent must not change. */
  readonly?: boolean;
  /** Replace a file already at the path. Default: refuse (`target_exists`), leaving it as it was. */
  overwrite?: boolean;
  /**
   * `auto` (default): gzip when the first 64 KiB shrink by 10 % or more, the sandbox can
   * inflate (`gzip`, `python3` or `node`), and this adapter's earlier pushes have not shown
   * plain bytes to go faster (a local `docker exec` pipe, a fast link: there gzip only costs
   * time); `never`; `always` (when the sandbox can inflate).
   */
  compress?: "auto" | "always" | "never";
  /**
   * For an exec API without stdin only: the largest file the base64 fallback moves (one
   * command per 48 KiB of it); a larger one is refused (`too_large_for_base64`) before any
   * command runs. Default 16 MiB (342 commands).
   */
  maxBase64Bytes?: number;
}

/** What a push did. */
export interface PushResult {
  /** The path written in the sandbox, as given. */
  path: string;
  size: number;
  sha256: string;
  /** How the bytes travelled. */
  transfer: "identity" | "gzip" | "base64-chunks";
}

/** What {@link pushStream} must know of the bytes. */
export interface PushSource extends PushOptions {
  /** Their SHA-256 (lowercase hex): checked inside the sandbox before the file is placed. */
  sha256: string;
  /** Their exact size: checked on disk inside the sandbox too. */
  size: number;
}

export const SAMPLE_BYTES = 64 * 1024;
/** Raw bytes per base64 command: 48 KiB encodes to exactly 64 KiB. */
const CHUNK_RAW_BYTES = 48 * 1024;
const MAX_BASE64_BYTES = 16 * 1024 * 1024;

/** Refuses a sandbox path that names no file. */
function checkPath(path: string): void {
  if (typeof path !== "string" || path === "" || path.includes("\0") || /(^|\/)\.{0,2}$/.test(path))
    throw new TypeError(`Airlock: the sandbox path must name a file: ${JSON.stringify(path)}`);
}

/**
 * Streams `source` into the sandbox at `path` (see the module). Refusals (`AirlockError`,
 * `status: 0`, an `ExecErrorCode`): `target_exists`, `transfer_mismatch` (the bytes did not
 * arrive intact; nothing was kept), `sandbox_cannot_verify` (no SHA-256 tool),
 * `sandbox_cannot_write`, `exec_failed`, `exec_unavailable`; for an exec API without stdin
 * also `too_large_for_base64` and `sandbox_cannot_decode`. `source` is cancelled on a refusal.
 */
export async function pushStream(
  exec: ExecAdapter,
  source: ReadableStream<Uint8Array>,
  path: string,
  options: PushSource,
): Promise<PushResult> {
  try {
    return await push(exec, source, path, options);
  } catch (error) {
    await source.cancel().catch(() => undefined);
    throw error;
  }
}

async function push(
  exec: ExecAdapter,
  source: ReadableStream<Uint8Array>,
  path: string,
  options: PushSource,
): Promise<PushResult> {
  const sha256 = checkPush(path, options);
  if (exec.stdin === false) refuseTooLargeForBase64(exec, path, options);
  const commands = await withHasher(exec);
  if (exec.stdin === false)
    return pushChunked(exec, commands, source, path, {
      sha256,
      mode: options.readonly ? "0444" : "",
      replace: options.overwrite ? "1" : "0",
      rand: randomBytes(6).toString("hex"),
      size: options.size,
    });

  const { stream, gzip } = await maybeGzip(source, options, gzipAllowed(exec, commands, options));
  const encoding = gzip ? "gzip" : "identity";
  const started = performance.now();
  const exit = await runSmall(
    exec,
    pushArgv(commands, path, { ...options, sha256 }, encoding),
    stream,
  );
  return pushed(exec, path, { ...options, sha256 }, encoding, exit, started);
}

/** Checks a push's arguments; returns its SHA-256 in lowercase. */
export function checkPush(path: string, options: PushSource): string {
  checkPath(path);
  const sha256 = options.sha256?.toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(sha256 ?? ""))
    throw new TypeError("Airlock: a push needs the bytes' sha256 (64 hex digits)");
  if (!Number.isSafeInteger(options.size) || options.size < 0)
    throw new TypeError("Airlock: a push needs the bytes' exact size");
  return sha256;
}

/** The sandbox command that takes the bytes on stdin, checks and places them. */
export function pushArgv(
  commands: SandboxCommands & { sha256: string },
  path: string,
  options: PushSource,
  encoding: "identity" | "gzip",
): string[] {
  return [
    "sh",
    "-c",
    pushScript(commands),
    "airlock-push",
    path,
    options.sha256,
    options.overwrite ? "1" : "0",
    options.readonly ? "0444" : "",
    randomBytes(6).toString("hex"),
    encoding,
    String(options.size),
  ];
}

/** The result of a push command that ended with `exit`, or its refusal. */
export function pushed(
  exec: ExecAdapter,
  path: string,
  options: PushSource,
  encoding: "identity" | "gzip",
  exit: ExecExit & { stdout?: string },
  started: number,
): PushResult {
  if (exit.code !== 0 || (exit.stdout !== undefined && exit.stdout.trim() !== "ok"))
    throw pushFailure(exec, path, exit);
  recordRate(exec, "push", encoding, options.size, performance.now() - started);
  return { path, size: options.size, sha256: options.sha256, transfer: encoding };
}

function refuseTooLargeForBase64(exec: ExecAdapter, path: string, options: PushSource): void {
  const limit = options.maxBase64Bytes ?? MAX_BASE64_BYTES;
  if (options.size <= limit) return;
  throw execError(
    "too_large_for_base64",
    `push to ${path} in ${exec.label}: it takes no stdin, and ${options.size} bytes is more than the base64 fallback moves (${limit} bytes, ${Math.ceil(limit / CHUNK_RAW_BYTES)} commands); nothing was moved`,
  );
}

const PUSH_EXIT_CODES: Record<number, ExecErrorCode> = {
  [EXIT.exists]: "target_exists",
  [EXIT.mismatch]: "transfer_mismatch",
  [EXIT.noDirectory]: "sandbox_cannot_write",
  [EXIT.cannotCreate]: "sandbox_cannot_write",
  [EXIT.cannotPlace]: "sandbox_cannot_write",
};

function pushFailure(
  exec: ExecAdapter,
  path: string,
  exit: { code: number; stderr: string },
): AirlockError {
  return execFailure(exec, `push to ${path}`, exit, PUSH_EXIT_CODES[exit.code] ?? "exec_failed");
}

/**
 * Whether a push may gzip: the sandbox can inflate, it is not `never`, and for `auto` this
 * adapter's earlier pushes have not shown plain bytes to go faster (then the first 64 KiB decide).
 */
export function gzipAllowed(
  exec: ExecAdapter,
  commands: SandboxCommands,
  options: PushOptions,
): boolean {
  if (commands.inflate === undefined || options.compress === "never") return false;
  return options.compress === "always" || gzipMayPay(exec, "push");
}

/** Whether the first 64 KiB of `sample` shrink by 10 % or more under gzip -1. */
export function gzipPays(sample: Uint8Array): boolean {
  return (
    sample.byteLength >= SAMPLE_BYTES &&
    deflateRawSync(sample, { level: 1 }).byteLength * 10 <= SAMPLE_BYTES * 9
  );
}

/** Decides on gzip from the first 64 KiB (read ahead, then put back). */
async function maybeGzip(
  source: ReadableStream<Uint8Array>,
  options: PushSource,
  canGzip: boolean,
): Promise<{ stream: ReadableStream<Uint8Array>; gzip: boolean }> {
  const mode = options.compress ?? "auto";
  if (!canGzip || mode === "never") return { stream: source, gzip: false };
  if (mode === "always") return { stream: gzipped(source), gzip: true };
  if (options.size <= SAMPLE_BYTES) return { stream: source, gzip: false };
  const reader = source.getReader();
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let ended = false;
  while (headBytes < SAMPLE_BYTES) {
    const { done, value } = await reader.read();
    if (done) {
      ended = true;
      break;
    }
    head.push(value);
    headBytes += value.byteLength;
  }
  const sample = Buffer.concat(head).subarray(0, SAMPLE_BYTES);
  const gzip = gzipPays(sample);
  const whole = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = head.shift();
        if (next) return controller.enqueue(next);
        const { done, value } = ended
          ? { done: true as const, value: undefined }
          : await reader.read();
        if (done || !value) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 4 },
  );
  return gzip ? { stream: gzipped(whole), gzip } : { stream: whole, gzip };
}

function gzipped(stream: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const zip = createGzip({ level: 1 });
  // pipeline: a reader that stops early (the command is gone) cancels the source too.
  pipeline(Readable.fromWeb(stream as import("node:stream/web").ReadableStream), zip, () => {});
  return Readable.toWeb(zip) as ReadableStream<Uint8Array>;
}

/** The base64 fallback: one command per 64 KiB of base64, then a check and the rename. */
async function pushChunked(
  exec: ExecAdapter,
  commands: SandboxCommands & { sha256: string },
  source: ReadableStream<Uint8Array>,
  path: string,
  args: { sha256: string; mode: string; replace: string; rand: string; size: number },
): Promise<PushResult> {
  const { decodeBase64 } = commands;
  if (!decodeBase64)
    throw execError(
      "sandbox_cannot_decode",
      `${exec.label} takes no stdin and has none of base64, openssl, python3 or node to decode base64; nothing was moved`,
    );
  const { sha256, mode, replace, rand } = args;
  const opened = await runSmall(exec, [
    "sh",
    "-c",
    chunkedOpenScript(commands),
    "airlock-push",
    path,
    sha256,
    replace,
    mode,
    rand,
  ]);
  if (opened.code !== 0) throw pushFailure(exec, path, opened);
  const tmp = opened.stdout.replace(/\n$/, "");
  const append = chunkScript({ ...commands, decodeBase64 });
  let size = 0;
  const reader = source.getReader();
  try {
    let pending = Buffer.alloc(0);
    for (let ended = false; !ended;) {
      const { done, value } = await reader.read();
      if (done) ended = true;
      else pending = Buffer.concat([pending, value]);
      while (pending.byteLength >= CHUNK_RAW_BYTES || (ended && pending.byteLength > 0)) {
        const piece = pending.subarray(0, CHUNK_RAW_BYTES);
        pending = pending.subarray(piece.byteLength);
        const exit = await runSmall(exec, [
          "sh",
          "-c",
          append,
          "airlock-chunk",
          tmp,
          piece.toString("base64"),
        ]);
        if (exit.code !== 0) throw pushFailure(exec, path, exit);
        size += piece.byteLength;
      }
    }
  } catch (error) {
    await reader.cancel().catch(() => undefined);
    await runSmall(exec, ["rm", "-f", "--", tmp]).catch(() => undefined);
    throw error;
  }
  const finish = chunkedFinishScript(commands);
  const exit = await runSmall(exec, [
    "sh",
    "-c",
    finish,
    "airlock-finish",
    tmp,
    path,
    sha256,
    replace,
    mode,
    String(args.size),
  ]);
  if (exit.code !== 0 || exit.stdout.trim() !== "ok") throw pushFailure(exec, path, exit);
  return { path, size, sha256, transfer: "base64-chunks" };
}
