import { createWriteStream } from "node:fs";
import { tmpdir } from "node:os";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { CliError, fsError } from "../cli/errors.js";
import { MIN_PART_BYTES } from "../../../src/part-plan.js";
import { SINGLE_UPLOAD_MAX_BYTES } from "../../../src/services/uploads/single-upload-limit.js";
import { DigestStream } from "./digest.js";
import { MEMBER_SPAN, MemberLog, SpanPool, gzipMembers, spansOf } from "./gzip-members.js";
import { PartDigestStream } from "./part-digests.js";
import { SAMPLE_BYTES, gzipPays, type StoredBytes } from "./prepare.js";
import { sniff, type Sniffed } from "./sniff.js";
import { releaseTemp, tempPath } from "./temp-files.js";

/**
 * Standard input, read once: whole in memory when it ends within the one-request limit,
 * otherwise spooled to a temp file as it streams in (hashed, and gzipped where the start of
 * it shows gzip pays), so memory stays flat however long it runs.
 */
export type Spooled =
  | { kind: "memory"; original: Buffer; sniffed: Sniffed }
  | { kind: "disk"; size: number; sha256: string; contentType: string; stored: StoredBytes };

export async function spoolStdin(input: Readable, level: number): Promise<Spooled> {
  const chunks = input[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const next = () =>
    chunks.next().catch((err: unknown) => {
      throw fsError("read", "standard input", err);
    });
  const head: Buffer[] = [];
  let length = 0;
  while (length <= SINGLE_UPLOAD_MAX_BYTES) {
    const { done, value } = await next();
    if (done) {
      const original = Buffer.concat(head);
      return { kind: "memory", original, sniffed: sniff(original, false) };
    }
    const chunk = typeof value === "string" ? Buffer.from(value) : value;
    head.push(chunk);
    length += chunk.length;
  }

  const sample = Buffer.concat(head).subarray(0, SAMPLE_BYTES);
  const sniffed = sniff(sample, true);
  const gzip = gzipPays({ sample, size: length, compressed: sniffed.compressed }, level);
  async function* everything(): AsyncGenerator<Buffer> {
    yield* head;
    head.length = 0; // Given away: memory holds no more than the chunk in flight.
    for (;;) {
      const { done, value } = await next();
      if (done) return;
      yield value;
    }
  }
  const temp = tempPath(tmpdir(), "airlock-stdin-", gzip ? ".gz" : ".bin");
  const original = new DigestStream();
  const stored = gzip ? new DigestStream() : original;
  // The part size depends on the total, still unknown: digests at the smallest part size fit
  // every input up to tens of GB, and a pass of their own is taken for the rest.
  const parts = new PartDigestStream(MIN_PART_BYTES);
  // Its length unknown, the input gets the usual span, and threads once it proves long.
  const log = new MemberLog(MEMBER_SPAN);
  try {
    const out = createWriteStream(temp, { flags: "wx", mode: 0o600 });
    const source = Readable.from(everything());
    const pool = new SpanPool(MEMBER_SPAN);
    const members = (chunks: AsyncIterable<Buffer>) =>
      gzipMembers(spansOf(chunks, pool), pool, level, log, false);
    if (gzip) await pipeline(source, original, members, stored, parts, out);
    else await pipeline(source, original, parts, out);
  } catch (err) {
    await releaseTemp(temp);
    throw err instanceof CliError ? err : fsError("write temp file", temp, err);
  }
  return {
    kind: "disk",
    size: original.bytes,
    sha256: original.hex(),
    contentType: sniffed.contentType,
    stored: {
      encoding: gzip ? "gzip" : "identity",
      path: temp,
      storedSize: stored.bytes,
      storedSha256: stored.hex(),
      partSha256: parts.parts.finish(),
      members: gzip ? log.table() : undefined,
      dispose: () => releaseTemp(temp),
    },
  };
}
