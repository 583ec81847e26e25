/**
 * Gzip stored as independent members, built by hand as a shim would (docs/api.md, "The gzip
 * member table"): each `span` bytes of the original deflated on their own, concatenated.
 */
import { gzip, sha256Hex } from "./bytes";

/** A tabled gzip upload of `bytes`: the stored bytes, the table and the declare's fields. */
export async function gzipMembers(bytes: Uint8Array, span = 1024 * 1024) {
  const count = Math.max(1, Math.ceil(bytes.byteLength / span));
  const members: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    members.push(await gzip(bytes.subarray(i * span, Math.min((i + 1) * span, bytes.byteLength))));
  }
  const stored = concat(members);
  const table = { span, storedSizes: members.map((m) => m.byteLength) };
  return {
    stored,
    members,
    table,
    declared: {
      size: bytes.byteLength,
      sha256: await sha256Hex(bytes),
      encoding: "gzip" as const,
      storedSize: stored.byteLength,
      storedSha256: await sha256Hex(stored),
      members: table,
    },
  };
}

/** The byte strings one after another. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

/** `size` bytes of text that compress well and differ at every offset (so ranges are checked). */
export function countingText(size: number): Uint8Array {
  const out = new Uint8Array(size);
  const seed = crypto.randomUUID();
  let offset = 0;
  for (let line = 0; offset < size; line++) {
    const text = new TextEncoder().encode(`${seed} line ${line} of the counting text\n`);
    out.set(text.subarray(0, size - offset), offset);
    offset += text.byteLength;
  }
  return out;
}
