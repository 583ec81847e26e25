/**
 * Workers send (and R2 stores) a stream only when its length is known: this gives a
 * stream that length, erroring if the source delivers more or fewer bytes.
 */
export function withKnownLength(
  body: ReadableStream<Uint8Array>,
  length: number,
): ReadableStream<Uint8Array> {
  const fixed = new FixedLengthStream(length);
  body.pipeTo(fixed.writable).catch(() => {});
  return fixed.readable;
}
