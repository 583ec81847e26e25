import type { Deps } from "../deps";
import { bytesToHex } from "../encoding";
import { AppError } from "../errors";
import { newId } from "../ids";
import { logEvent } from "../log";
import { MIN_PART_BYTES } from "../part-plan";
import type { MultipartTarget } from "../storage/blob-store";
import { sendPart } from "./upload-request-forward";

/** A body of now-known length, ready for `ingest`. */
export interface Staged {
  body: ReadableStream<Uint8Array>;
  size: number;
}

/**
 * Takes a body of unknown length (a chunked PUT) up to `limit` bytes and hands it to
 * `consume` with its length: a short one from memory (one part at most), a longer one
 * through a staging multipart upload cut by the relay into `MIN_PART_BYTES` parts, so
 * memory stays at one part whatever the size. A body that runs past `limit` is cut off at
 * once (`413 payload_too_large`). The staging object is removed whatever happens.
 */
export async function stageUnsized<T>(
  deps: Deps,
  body: ReadableStream<Uint8Array>,
  limit: number,
  consume: (staged: Staged) => Promise<T>,
): Promise<T> {
  const reader = body.getReader();
  const buffer = new Uint8Array(MIN_PART_BYTES);
  let filled = 0;
  let total = 0;
  let staging: Staging | null = null;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        throw new AppError(
          "payload_too_large",
          `the body ran past ${limit} bytes, the most this upload link takes; nothing was kept`,
        );
      }
      for (let offset = 0; offset < value.byteLength;) {
        const take = Math.min(buffer.byteLength - filled, value.byteLength - offset);
        buffer.set(value.subarray(offset, offset + take), filled);
        filled += take;
        offset += take;
        if (filled === buffer.byteLength) {
          staging ??= await Staging.start(deps);
          await staging.send(buffer);
          filled = 0;
        }
      }
    }
    if (!staging) return await consume({ body: streamOf(buffer.slice(0, filled)), size: total });
    if (filled > 0) await staging.send(buffer.subarray(0, filled));
    return await consume({ body: await staging.assemble(), size: total });
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  } finally {
    await staging?.discard();
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
    await sendPart(this.deps, this.target, part, bytes.slice(), "");
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
