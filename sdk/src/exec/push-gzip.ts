/** Whether a push gzips its bytes, and the gzipped stream. */
import { Readable, pipeline } from "node:stream";
import { createGzip, deflateRawSync } from "node:zlib";
import type { ExecAdapter } from "./exec.js";
import type { PushOptions, PushSource } from "./push-contract.js";
import { gzipMayPay } from "./rates.js";
import type { SandboxCommands } from "./sandbox-scripts.js";

export const SAMPLE_BYTES = 64 * 1024;

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
export async function maybeGzip(
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
