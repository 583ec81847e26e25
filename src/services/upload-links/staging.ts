import type { Deps } from "../../deps";
import { bytesToHex } from "../../encoding";
import { AppError } from "../../errors";
import { newId } from "../../ids";
import { logEvent } from "../../log";
import { MIN_PART_BYTES } from "../../part-plan";
import type { MultipartTarget } from "../../storage/blob-store";
import { sendPart } from "./forward";

/** A body of now-known length, ready for `ingest`. */
export interface Staged {
  body: ReadableStream<Uint8Array>;
  size: number;
}

/**
 * Takes a body of unknown length (a chunked PUT) up to `limit` bytes and hands it to
 * `consume` with its length: a short one from memory (one part at most), a longer one
 * through a staging multipart upload cut by the relay into `MIN_PART_BYTES` parts. Memory
 * per body is what has arrived and is not yet sent on: never more than one part, nor more
 * than `limit`, nor more than the sender actually sent (a stalled stream pins only the bytes
 * it sent). A body that runs past `limit` is cut off at once (`overLimit`, by default
 * `413 payload_too_large`; logged with `logged`'s fields). The staging object is removed
 * whatever happens.
 */
export async function stageUnsized<T>(
  deps: Deps,
  body: ReadableStream<Uint8Array>,
  limit: number,
  consume: (staged: Staged) => Promise<T>,
  overLimit?: AppError,
  logged: Record<string, unknown> = {},
): Promise<T> {
  const reader = body.getReader();
  const pending = new PartBuffer(MIN_PART_BYTES);
  let total = 0;
  let staging: Staging | null = null;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        // What was read when the body was cut: at most the limit plus the chunk that crossed it.
        logEvent("upload_link_body_cut", { ...logged, limit, received: total }, "warn");
        throw (
          overLimit ??
          new AppError(
            "payload_too_large",
            `the body ran past ${limit} bytes, the most this upload link takes; nothing was kept`,
          )
        );
      }
      for (const part of pending.add(value)) {
        staging ??= await Staging.start(deps);
        await staging.send(part);
      }
    }
    const rest = pending.take();
    if (!staging) return await consume({ body: streamOf(rest), size: total });
    if (rest.byteLength > 0) await staging.send(rest);
    return await consume({ body: await staging.assemble(), size: total });
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  } finally {
    await staging?.discard();
  }
}

/** Chunks as they arrive, handed out as whole parts of `partBytes` once that many are held. */
class PartBuffer {
  private chunks: Uint8Array[] = [];
  private held = 0;

  constructor(private readonly partBytes: number) {}

  /** Keeps `chunk`; returns the whole parts now complete (each copied into one array). */
  add(chunk: Uint8Array): Uint8Array[] {
    const parts: Uint8Array[] = [];
    let offset = 0;
    while (offset < chunk.byteLength) {
      const take = Math.min(this.partBytes - this.held, chunk.byteLength - offset);
      this.chunks.push(chunk.subarray(offset, offset + take));
      this.held += take;
      offset += take;
      if (this.held === this.partBytes) parts.push(this.take());
    }
    return parts;
  }

  /** Everything held, in one array; the buffer is empty after. */
  take(): Uint8Array {
    const out = new Uint8Array(this.held);
    let at = 0;
    for (const chunk of this.chunks) {
      out.set(chunk, at);
      at += chunk.byteLength;
    }
    this.chunks = [];
    this.held = 0;
    return out;
  }
}

/** A multipart upload to a `staging/` key the relay fills itself. */
class Staging {
  private parts = 0;

  private constructor(
    private readonly deps: Deps,
    private readonly target: MultipartTarget,
  ) {}

  static async start(deps: Deps): Promise<Staging> {
    const key = `staging/${newId("fil")}`;
    const storeUploadId = await deps.store.createMultipartUpload(key);
    return new Staging(deps, { uploadId: newId("upl"), storeUploadId, key });
  }

  async send(bytes: Uint8Array): Promise<void> {
    const sha256Hex = bytesToHex(await crypto.subtle.digest("SHA-256", bytes));
    const part = { partNumber: ++this.parts, size: bytes.byteLength, sha256Hex };
    await sendPart(this.deps, this.target, part, bytes, "");
  }

  async assemble(): Promise<ReadableStream<Uint8Array>> {
    const { store } = this.deps;
    await store.completeMultipartUpload(this.target, await store.listParts(this.target));
    const object = await store.get(this.target.key);
    if (!object) throw new Error("staged object vanished");
    return object.body as ReadableStream<Uint8Array>;
  }

  async discard(): Promise<void> {
    const { store } = this.deps;
    await Promise.all([
      store.abortMultipartUpload(this.target).catch(() => {}),
      store.delete(this.target.key),
    ]).catch((error: unknown) =>
      logEvent("staging_cleanup_failed", { key: this.target.key, error: String(error) }, "warn"),
    );
  }
}

function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new Blob([bytes]).stream();
}
