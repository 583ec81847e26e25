/**
 * The exec transport for files on this machine: a local file pushed into a sandbox, a sandbox
 * file collected onto local disk. Where the adapter hands the CLI a local file as its stdin or
 * stdout (`runWithFiles`: the ready adapters do) and the bytes go as they are, they never pass
 * through this process, so a transfer costs what the CLI alone costs plus the SHA-256 checks;
 * otherwise they stream as in {@link pushStream} and {@link collectStream}.
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { open, rename, rm, type FileHandle } from "node:fs/promises";
import { basename, dirname, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { tempNear } from "../node-files.js";
import {
  checkCollectPath,
  collectCompression,
  collectFailure,
  collectMismatch,
  collectStream,
  receivedProblem,
  type CollectOptions,
} from "./collect.js";
import type { ExecAdapter } from "./exec.js";
import { withHasher } from "./probe.js";
import { recordRate } from "./rates.js";
import {
  checkPush,
  pushArgv,
  pushStream,
  pushed,
  type PushOptions,
  type PushResult,
} from "./push.js";
import { SAMPLE_BYTES, gzipAllowed, gzipPays } from "./push-gzip.js";
import { COLLECT_MAGIC, collectScript, type SandboxCommands } from "./sandbox-scripts.js";

/** Options for {@link pushLocalFile}. */
export interface PushLocalOptions extends PushOptions {
  /** The file's SHA-256 when it is known already; else the file is read once to hash it. */
  sha256?: string;
}

/** A sandbox file collected to local disk. */
export interface CollectedFile {
  /** The local path written. */
  path: string;
  size: number;
  sha256: string;
  transfer: "identity" | "gzip";
}

const READ_BYTES = 1024 * 1024;

/**
 * Pushes the local file `localPath` into the sandbox at `path`: checked by SHA-256 there and
 * only then put in place, as {@link pushStream} does (same options and refusals).
 */
export async function pushLocalFile(
  exec: ExecAdapter,
  localPath: string,
  path: string,
  options: PushLocalOptions = {},
): Promise<PushResult> {
  const handle = await open(localPath, "r");
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new TypeError(`Airlock: not a regular file: ${localPath}`);
    const size = info.size;
    const source = { ...options, size, sha256: options.sha256 ?? (await sha256Of(handle, size)) };
    source.sha256 = checkPush(path, source);
    const streamed = () =>
      pushStream(exec, Readable.toWeb(createReadStream(localPath)) as ReadableStream, path, source);
    if (!exec.runWithFiles || exec.stdin === false) return await streamed();
    const commands = await withHasher(exec);
    if (await gzipWanted(exec, commands, handle, options)) return await streamed();
    const started = performance.now();
    const exit = await exec.runWithFiles(pushArgv(commands, path, source, "identity"), {
      stdin: handle.fd,
    });
    return pushed(exec, path, source, "identity", exit, started);
  } finally {
    await handle.close();
  }
}

/** Whether a push should gzip, as {@link pushStream} decides it. */
async function gzipWanted(
  exec: ExecAdapter,
  commands: SandboxCommands,
  handle: FileHandle,
  options: PushOptions,
): Promise<boolean> {
  if (!gzipAllowed(exec, commands, options)) return false;
  if (options.compress === "always") return true;
  const sample = Buffer.alloc(SAMPLE_BYTES);
  const { bytesRead } = await handle.read(sample, 0, SAMPLE_BYTES, 0);
  return gzipPays(sample.subarray(0, bytesRead));
}

async function sha256Of(handle: FileHandle, size: number): Promise<string> {
  const hash = createHash("sha256");
  const buffer = Buffer.alloc(Math.min(READ_BYTES, Math.max(size, 1)));
  for (let at = 0; ;) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, at);
    if (bytesRead === 0) break;
    hash.update(buffer.subarray(0, bytesRead));
    at += bytesRead;
  }
  return hash.digest("hex");
}

/**
 * Collects the sandbox's file at `path` into the local file `localPath` (replacing it): the
 * bytes land in a temp file beside it, are checked against the size and SHA-256 the sandbox
 * read, and only then renamed into place; nothing is left behind on a refusal (those of
 * {@link collectStream}).
 */
export async function collectToLocalFile(
  exec: ExecAdapter,
  path: string,
  localPath: string,
  options: CollectOptions = {},
): Promise<CollectedFile> {
  checkCollectPath(path);
  const target = resolve(localPath);
  const temp = tempNear(dirname(target), basename(target));
  try {
    const collected =
      exec.runWithFiles && collectCompression(exec, options) === "never"
        ? await collectRaw(exec, path, temp)
        : await collectStreamed(exec, path, temp, options);
    await rename(temp, target);
    return { ...collected, path: target };
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
}

async function collectStreamed(
  exec: ExecAdapter,
  path: string,
  temp: string,
  options: CollectOptions,
): Promise<Omit<CollectedFile, "path">> {
  const collected = await collectStream(exec, path, options);
  await pipeline(
    Readable.fromWeb(collected.stream as import("node:stream/web").ReadableStream),
    createWriteStream(temp, { flags: "wx" }),
  ).catch((error: unknown) => {
    throw collected.failure() ?? error;
  });
  const sha256 = collected.sha256();
  if (sha256 === undefined) throw collected.failure() ?? new Error("collect ended unchecked");
  return { size: collected.size, sha256, transfer: collected.transfer };
}

/** The sandbox's stdout goes straight into `temp`; the header and the hash come on stderr. */
async function collectRaw(
  exec: ExecAdapter,
  path: string,
  temp: string,
): Promise<Omit<CollectedFile, "path">> {
  const commands = await withHasher(exec);
  const argv = ["sh", "-c", collectScript(commands), "airlock-collect", path, "never", "raw"];
  const started = performance.now();
  const handle = await open(temp, "wx+");
  let exit;
  let received;
  try {
    exit = await exec.runWithFiles!(argv, { stdout: handle.fd });
    if (exit.code !== 0) throw collectFailure(exec, path, exit);
    const size = (await handle.stat()).size;
    received = { size, sha256: await sha256Of(handle, size) };
  } finally {
    await handle.close();
  }
  const header = new RegExp(`^${COLLECT_MAGIC} (\\d+) identity$`, "m").exec(exit.stderr);
  if (!header)
    throw collectFailure(exec, path, { code: 0, stderr: "its stderr did not hold the header" });
  const size = Number(header[1]);
  const problem = receivedProblem(exit.stderr, size, received);
  if (problem) throw collectMismatch(exec, path, problem);
  recordRate(exec, "collect", "identity", size, performance.now() - started);
  return { size, sha256: received.sha256, transfer: "identity" };
}
