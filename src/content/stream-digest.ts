import { createHash } from "node:crypto";
import { bytesToHex } from "../encoding";

export interface Digest {
  size: number;
  sha256Hex: string;
}

/**
 * SHA-256 of a stream that must be exactly `size` bytes long, piped natively (no
 * JavaScript runs per chunk: reading a large object chunk by chunk from script is many
 * times slower). Rejects as soon as the stream runs past `size`, or ends short of it.
 */
export async function digestExactly(
  stream: ReadableStream<Uint8Array>,
  size: number,
): Promise<Digest> {
  const digest = new crypto.DigestStream("SHA-256");
  const hashed = digest.digest;
  hashed.catch(() => {}); // a failed pipe rejects it too; the pipe's error is what counts
  const exact = new FixedLengthStream(size);
  await Promise.all([stream.pipeTo(exact.writable), exact.readable.pipeTo(digest)]);
  return { size, sha256Hex: bytesToHex(await hashed) };
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
