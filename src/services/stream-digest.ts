import { createHash } from "node:crypto";

export interface Digest {
  size: number;
  sha256Hex: string;
}

/**
 * SHA-256 and length of a stream, consumed to the end. Rejects once more than
 * `maxSize` bytes arrive, so a decompression bomb costs no more than the declared size.
 * Hashed with node:crypto chunk by chunk, in the reading loop: chaining a TransformStream
 * into a `crypto.DigestStream` costs a round of promises per chunk, several times slower.
 */
export async function digestStream(
  stream: ReadableStream<Uint8Array>,
  maxSize = Infinity,
): Promise<Digest> {
  const hash = createHash("sha256");
  let size = 0;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxSize) throw new Error(`more than the declared ${maxSize} bytes`);
      hash.update(value);
    }
  } catch (error) {
    await reader.cancel(error).catch(() => {});
    throw error;
  }
  return { size, sha256Hex: hash.digest("hex") };
}

/**
 * A pass-through stream that also feeds every chunk to `sink` (hashing, inflating),
 * waiting for it so the slower side sets the pace and nothing piles up in memory.
 * `result` settles once the passed-through stream has ended and the sink has finished.
 */
export function teeInto<T>(sink: (input: ReadableStream<Uint8Array>) => Promise<T>): {
  transform: TransformStream<Uint8Array, Uint8Array>;
  result: Promise<T>;
} {
  const side = new TransformStream<Uint8Array, Uint8Array>();
  const writer = side.writable.getWriter();
  const result = sink(side.readable);
  // If the sink fails, the main stream must fail too, not wait on a writer nobody reads.
  result.catch((error: unknown) => writer.abort(error).catch(() => {}));
  const transform = new TransformStream<Uint8Array, Uint8Array>({
    async transform(chunk, controller) {
      // The sink gets its own copy: a native sink may take over the buffer it is given.
      await writer.write(chunk.slice());
      controller.enqueue(chunk);
    },
    async flush() {
      await writer.close();
      await result;
    },
  });
  return { transform, result };
}

/** Passes bytes through while hashing them; `result` settles once the stream has ended. */
export function passThroughDigest(): {
  transform: TransformStream<Uint8Array, Uint8Array>;
  result: Promise<Digest>;
} {
  const hash = createHash("sha256");
  let size = 0;
  let settle: (digest: Digest) => void = () => {};
  const result = new Promise<Digest>((resolve) => (settle = resolve));
  const transform = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      size += chunk.byteLength;
      hash.update(chunk);
      controller.enqueue(chunk);
    },
    flush() {
      settle({ size, sha256Hex: hash.digest("hex") });
    },
  });
  return { transform, result };
}
