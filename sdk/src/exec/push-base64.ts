/** The base64 fallback of a push, for an exec API that takes no stdin. */
import { execError } from "../errors.js";
import type { ExecAdapter } from "./exec.js";
import { runSmall } from "./probe.js";
import { pushFailure, type PushResult, type PushSource } from "./push-contract.js";
import {
  chunkScript,
  chunkedFinishScript,
  chunkedOpenScript,
  type SandboxCommands,
} from "./sandbox-scripts.js";

/** Raw bytes per base64 command: 48 KiB encodes to exactly 64 KiB. */
const CHUNK_RAW_BYTES = 48 * 1024;
const MAX_BASE64_BYTES = 16 * 1024 * 1024;

export function refuseTooLargeForBase64(
  exec: ExecAdapter,
  path: string,
  options: PushSource,
): void {
  const limit = options.maxBase64Bytes ?? MAX_BASE64_BYTES;
  if (options.size <= limit) return;
  throw execError(
    "too_large_for_base64",
    `push to ${path} in ${exec.label}: it takes no stdin, and ${options.size} bytes is more than the base64 fallback moves (${limit} bytes, ${Math.ceil(limit / CHUNK_RAW_BYTES)} commands); nothing was moved`,
  );
}

/** The base64 fallback: one command per 64 KiB of base64, then a check and the rename. */
export async function pushChunked(
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
