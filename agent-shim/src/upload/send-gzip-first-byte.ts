import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { CliError, RefusalError } from "../cli/errors.js";
import { readText, request, statusError } from "../transport/http.js";
import type { FileRecord, MultipartAnswer, PartUpload } from "../transport/relay-client.js";
import { withRetry } from "../transport/retry.js";
import { humanSize } from "../../../src/services/human-size.js";
import { partSizeFor } from "../../../src/part-plan.js";
import { MemberLog, SpanPool, fileSpans, gzipMembers, memberSpanFor } from "./gzip-members.js";
import { WORKERS_AFTER_MEMBERS } from "./gzip-workers.js";
import { PASS_CHUNK_BYTES, changedWhileSending } from "./prepare.js";
import { resumed, type FirstByteFile } from "./send-from-first-byte.js";
import type { SendContext, Sent } from "./send-stored.js";
import { onInterrupt, releaseTemp } from "./temp-files.js";
import { isRetryableStorageAnswer, uploadTarget } from "./upload.js";
import { UploadStates, type SavedUpload, type UploadKey } from "./upload-state.js";
import { partFile, type PartFile } from "./gzip-part-file.js";

/** A saved gzip upload: with the digest of each part this run or an earlier one stored. */
type SavedGzip = SavedUpload & { partDigests?: Record<string, string> };
/** A part's signed PUT. */
type PartPut = PartUpload["put"];

/** PUT slots: compressed parts going up at once beside the one filling (each spooled to a temp file). */
const MAX_PARTS_IN_FLIGHT = 2;
/**
 * Full parts held on disk (signed, in flight or waiting for a slot) before compression waits:
 * more than the parts in flight, so that the cores go on compressing while PUTs are slow.
 */
const MAX_PARTS_SPOOLED = 5;
/** The state file is rewritten at most this often as parts land (and on Ctrl-C). */
const SAVE_EVERY_MS = 500;

/**
 * Sends a large file that gzip pays for as it compresses (docs/api.md, "gzip with the hash
 * at complete"): declared with `"encoding": "gzip"` and no hashes; the file is read once, cut
 * into 1 MiB spans gzipped as independent members (on every core, `gzipMembers`), and the
 * member stream is cut into parts of `partSizeFor(size)` — fixed by the original size, so no
 * stored size is needed to cut them — each PUT as soon as it is full, signed with its digest
 * and length. The original's SHA-256, the stored bytes' SHA-256 and the member table are
 * taken on the way and go with `complete`. Each part is spooled to a temp file while it fills
 * (its digest must be known before its PUT starts), so memory stays flat.
 *
 * Resumable: the upload and each stored part's digest are saved, and a later `send` of the
 * unchanged file compresses again and skips every part the store holds with the same digest
 * (gzip output is the same for the same bytes and level; a part that differs goes again).
 * Undefined when this way is not open (a relay that predates it; a saved upload of another kind).
 */
export async function sendGzipFromFirstByte(
  ctx: SendContext,
  file: FirstByteFile,
  level: number,
): Promise<(Sent & { sha256: string }) | undefined> {
  const { relay, states } = ctx;
  const key = UploadStates.key(relay.url, file.path, file.size, file.mtimeMs);
  const saved = (await states.load(key)) as SavedGzip | undefined;
  if (saved && (saved.sha256 !== "" || saved.encoding !== "gzip")) return undefined;
  const upload = saved ? await resumed(ctx, key, saved.uploadId, file) : undefined;
  if (upload?.status === "completed") {
    await states.remove(key);
    const { file: record } = upload;
    return { file: record, deduped: record.deduped, uploadedBytes: 0, sha256: record.sha256 };
  }
  if (upload && saved) return sendMembers(ctx, key, file, level, upload, saved);
  const started = await declared(ctx, key, file);
  return started && sendMembers(ctx, key, file, level, started.answer, started.saved);
}

/** Declares gzip without its hashes; undefined from a relay that does not take that. */
async function declared(
  { relay, states }: SendContext,
  key: UploadKey,
  file: FirstByteFile,
): Promise<{ answer: MultipartAnswer; saved: SavedGzip } | undefined> {
  const { name, size, contentType } = file;
  let answer;
  try {
    answer = await relay.declareUpload({
      name,
      size,
      contentType,
      encoding: "gzip",
      hashAtComplete: true,
    });
  } catch (err) {
    if (err instanceof RefusalError && err.body.code === "invalid_request") return undefined;
    throw err;
  }
  if (answer.status !== "multipart" || !Array.isArray(answer.missing)) return undefined;
  const saved: SavedGzip = {
    ...key,
    sha256: "",
    encoding: "gzip",
    storedSize: 0,
    storedSha256: "",
    partSize: partSizeFor(size),
    uploadId: answer.uploadId,
    createdAt: new Date().toISOString(),
    partDigests: {},
  };
  await states.save(saved);
  return { answer, saved };
}

/** Compresses the file, PUTs each part as it fills, and completes with what was learnt. */
async function sendMembers(
  ctx: SendContext,
  key: UploadKey,
  file: FirstByteFile,
  level: number,
  upload: MultipartAnswer,
  saved: SavedGzip,
): Promise<Sent & { sha256: string }> {
  const { relay, states, policy } = ctx;
  const { path, name, size } = file;
  const partSize = partSizeFor(size);
  if (upload.partSize !== partSize) {
    throw new CliError(`relay planned the parts of ${name} differently than airlock did`);
  }
  const { uploadId } = upload;
  // Parts the store holds whose digest this or an earlier run noted: skipped if made the same.
  const missing = new Set(upload.missing ?? []);
  const digests = (saved.partDigests ??= {});
  for (const n of Object.keys(digests)) if (missing.has(Number(n))) delete digests[n];
  let lastSave = Date.now();
  const save = async (force: boolean) => {
    if (!force && Date.now() - lastSave < SAVE_EVERY_MS) return;
    lastSave = Date.now();
    const next: SavedGzip = { ...saved, partDigests: { ...digests } };
    await states.save(next);
  };

  const original = createHash("sha256");
  const stored = createHash("sha256");
  let originalBytes = 0;
  let storedBytes = 0;
  let uploadedBytes = 0;
  const stop = new AbortController();
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;

  // PUT slots: a signed part waits here for one of the `slots` PUTs under way to end.
  const slots = Math.min(ctx.concurrency, MAX_PARTS_IN_FLIGHT);
  let putting = 0;
  const waiting: (() => void)[] = [];
  const slot = async () => {
    if (putting >= slots) await new Promise<void>((resolve) => waiting.push(resolve));
    putting += 1;
  };
  const freeSlot = () => {
    putting -= 1;
    waiting.shift()?.();
  };
  const putPart = async (partNumber: number, part: PartFile, sha256: string) => {
    // Signed as soon as full (beside the PUTs under way), then PUT once a slot is free.
    const [signed] = await relay.signParts(uploadId, name, [
      { partNumber, sha256, size: part.length },
    ]);
    if (!signed || signed.partNumber !== partNumber || typeof signed.put?.url !== "string") {
      throw new CliError(`relay gave an unexpected answer to the upload of ${name}`);
    }
    await slot();
    try {
      await putSigned(partNumber, part, signed.put);
    } finally {
      freeSlot();
    }
    digests[String(partNumber)] = sha256;
    await save(false);
  };
  const putSigned = async (partNumber: number, part: PartFile, put: PartPut) => {
    if (failure) throw failure.error;
    const which = `${name} (part ${partNumber})`;
    const target = uploadTarget(put.url, `upload of ${which}`);
    await withRetry(
      policy,
      target,
      async () => {
        // Read as the identity parts are, not a read stream's 64 KiB: fewer, larger socket writes
        // (512 MiB of text, four pairs of runs: 6% less CPU over shim, relay and store).
        const body = createReadStream(part.path, { highWaterMark: PASS_CHUNK_BYTES });
        const res = await request({ ...put, body, signal: stop.signal });
        const text = await readText(res);
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) return;
        const refused = `${target.service} refused upload of ${which}`;
        throw statusError(res, text, refused, isRetryableStorageAnswer);
      },
      stop.signal,
    );
    uploadedBytes += part.length;
  };

  let partNumber = 0;
  const flush = async (part: PartFile) => {
    partNumber += 1;
    await part.handle.close();
    const sha256 = part.hash.digest("hex");
    if (digests[String(partNumber)] === sha256) {
      await releaseTemp(part.path);
      return;
    }
    while (inFlight.size >= MAX_PARTS_SPOOLED) await Promise.race(inFlight);
    if (failure) {
      await releaseTemp(part.path);
      throw failure.error;
    }
    const sent: Promise<void> = putPart(partNumber, part, sha256).then(
      async () => {
        inFlight.delete(sent);
        await releaseTemp(part.path);
      },
      async (error: unknown) => {
        inFlight.delete(sent);
        await releaseTemp(part.path);
        if (!failure) {
          failure = { error };
          stop.abort(error);
        }
      },
    );
    inFlight.add(sent);
  };

  const span = memberSpanFor(size);
  const pool = new SpanPool(span);
  const log = new MemberLog(span);
  async function* hashed(spans: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const piece of spans) {
      original.update(piece);
      originalBytes += piece.length;
      yield piece;
    }
  }
  onInterrupt(async () => {
    await save(true);
    const again = `interrupted: run the same command again to resume the upload of ${name}`;
    return `${again} (${humanSize(Object.keys(digests).length * partSize)} of gzip stored)`;
  });
  try {
    const knownLarge = size > WORKERS_AFTER_MEMBERS * span;
    const members = gzipMembers(hashed(fileSpans(path, pool)), pool, level, log, knownLarge);
    let part = await partFile();
    for await (const member of members) {
      if (failure) break;
      stored.update(member);
      storedBytes += member.length;
      for (let offset = 0; offset < member.length;) {
        const take = Math.min(partSize - part.length, member.length - offset);
        await part.write(member.subarray(offset, offset + take));
        offset += take;
        if (part.length === partSize) {
          await flush(part);
          part = await partFile();
        }
      }
    }
    if (!failure && (part.length > 0 || partNumber === 0)) await flush(part);
    else await part.handle.close().then(() => releaseTemp(part.path));
    await Promise.all(inFlight);
    if (failure) throw failure.error;
    // One read of the file; a file written meanwhile would not be what was hashed.
    const now = await stat(path).catch(() => undefined);
    if (originalBytes !== size || now?.size !== size || now.mtimeMs !== file.mtimeMs) {
      throw changedWhileSending(path);
    }
    const sha256 = original.digest("hex");
    const completed = {
      sha256,
      storedSize: storedBytes,
      storedSha256: stored.digest("hex"),
      members: log.table(),
    };
    const record: FileRecord = await relay.completeUpload(uploadId, name, completed);
    await states.remove(key);
    return { file: record, deduped: record.deduped, uploadedBytes, sha256 };
  } finally {
    onInterrupt(undefined);
    stop.abort();
  }
}
