/**
 * Relay → sandbox over the exec channel: the bytes stream through the command's stdin (gzip
 * where it pays and the sandbox can inflate), land in a temp file beside the target, are
 * checked by SHA-256 inside the sandbox, and only then renamed into place.
 */
import { randomBytes } from "node:crypto";
import type { ExecAdapter, ExecExit } from "./exec.js";
import { runSmall, withHasher } from "./probe.js";
import { pushChunked, refuseTooLargeForBase64 } from "./push-base64.js";
import { pushFailure, type PushResult, type PushSource } from "./push-contract.js";
import { gzipAllowed, maybeGzip } from "./push-gzip.js";
import { recordRate } from "./rates.js";
import { pushScript, type SandboxCommands } from "./sandbox-scripts.js";

export type { PushOptions, PushResult, PushSource } from "./push-contract.js";

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
