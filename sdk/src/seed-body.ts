import { isReadableStream, type SizedBody } from "./http.js";
import type { BytesInput } from "./types.js";

/** The body of a seed: its length from the bytes, or from `size` for a stream. */
export function sizedBody(
  input: BytesInput | ReadableStream<Uint8Array>,
  options: { contentType?: string; size?: number },
): SizedBody {
  const declared = options.contentType;
  if (isReadableStream(input)) {
    const { size } = options;
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0)
      throw new TypeError("Airlock: a ReadableStream needs options.size, its exact length");
    return { data: input, size, contentType: declared ?? "application/octet-stream" };
  }
  if (ArrayBuffer.isView(input)) {
    const bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    return {
      data: bytes,
      size: bytes.byteLength,
      contentType: declared ?? "application/octet-stream",
    };
  }
  if (Object.prototype.toString.call(input) === "[object ArrayBuffer]") {
    const buffer = input as ArrayBuffer;
    return {
      data: buffer,
      size: buffer.byteLength,
      contentType: declared ?? "application/octet-stream",
    };
  }
  if (isBlob(input)) {
    return {
      data: input,
      size: input.size,
      contentType: declared ?? (input.type || "application/octet-stream"),
    };
  }
  throw new TypeError(
    "Airlock: seedInbox takes a Uint8Array, ArrayBuffer, Blob or ReadableStream" +
      " (or, from the /node entry, a file path)",
  );
}

function isBlob(value: unknown): value is Blob {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Blob).size === "number" &&
    typeof (value as Blob).stream === "function" &&
    typeof (value as Blob).arrayBuffer === "function"
  );
}
