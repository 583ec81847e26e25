import { open, stat } from "node:fs/promises";
import { CliError, RefusalError, fsError } from "../cli/errors.js";
import type { FileRecord, MultipartAnswer, PartUpload } from "../transport/relay-client.js";
import { partCount, partSizeFor } from "../../../src/part-plan.js";
import { eachPart, putPart, type PartsJob } from "./multipart-upload.js";
import { PartSigner, hashPart, type PartSource } from "./part-signer.js";
import { changedWhileSending } from "./prepare.js";
import { resumeHint, type SendContext, type Sent } from "./send-stored.js";
import { onInterrupt } from "./temp-files.js";
import { UploadStates, type UploadKey } from "./upload-state.js";
import { hashWholeAside, type WholeHashAside } from "./whole-hash-aside.js";

/** A file on disk, as it was when the send started. */
export interface FirstByteFile {
  path: string;
  name: string;
  size: number;
  mtimeMs: number;
  contentType: string;
}

/**
 * Sends a large file as it is read, without a pass over it first (docs/api.md, "Sending from
 * the first byte"): the upload is declared without its whole hash but with part 1's digest,
 * so that its answer signs part 1 (one round trip before the first byte); later parts are
 * hashed in order ahead of their PUTs and signed in batches (`PartSigner`). The store checks each
 * PUT against its digest (a part it refuses because the file changed under us is named as that),
 * while another thread hashes the whole file for `complete`. A dedup hit is found there. The upload is saved, so a later `send` of the file
 * resumes it. Undefined when this way is not open: the relay predates it, or a saved upload
 * of the file declared with its hashes is waiting to be resumed the hashed way.
 */
export async function sendFromFirstByte(
  ctx: SendContext,
  file: FirstByteFile,
): Promise<(Sent & { sha256: string }) | undefined> {
  const { relay, states } = ctx;
  const key = UploadStates.key(relay.url, file.path, file.size, file.mtimeMs);
  const { path, name, size } = file;
  // The file is opened while its saved upload (if any) is looked up: both are on the way to
  // the first byte.
  const opening = open(path, "r");
  opening.catch(() => undefined); // closed or reported below
  const saved = await states.load(key);
  if (saved && saved.sha256 !== "") {
    await (await opening.catch(() => undefined))?.close();
    return undefined;
  }
  const handle = await opening.catch((err: unknown) => {
    throw fsError("read", path, err);
  });
  const partSize = partSizeFor(size);
  const source: PartSource = { handle, path, name, size, partSize };
  const partSha256 = new Array<string>(partCount(size, partSize)).fill("");
  // The whole-file hash starts once the first part is on its way: its thread's start-up and
  // reads then take nothing from what comes before the first byte.
  let whole: WholeHashAside | undefined;
  const wholeHash = () => (whole ??= hashWholeAside(path)).hashed;
  try {
    const upload = saved ? await resumed(ctx, key, saved.uploadId, file) : undefined;
    if (upload?.status === "completed") {
      await states.remove(key);
      const { file: record } = upload;
      return { file: record, deduped: record.deduped, uploadedBytes: 0, sha256: record.sha256 };
    }
    let started = upload && { upload, saved: Promise.resolve() };
    if (!started) {
      // Part 1's digest goes with the declare, whose answer then signs it: one round trip.
      partSha256[0] = await hashPart(source, 1);
      started = await declared(ctx, key, file, [{ partNumber: 1, sha256: partSha256[0] }]);
    }
    if (!started) return undefined;
    const reading = { source, partSha256, wholeHash, saved: started.saved };
    return await sendParts(ctx, key, file, started.upload, reading);
  } finally {
    whole?.stop();
    await handle.close();
  }
}

/**
 * Declares the file without its hashes, with its first parts' digests; undefined from a relay
 * that does not take that. A relay that takes the declare but not the digests gets it again
 * without them. The upload is saved (for a later send to resume) while its first part goes.
 */
async function declared(
  { relay, states }: SendContext,
  key: UploadKey,
  file: FirstByteFile,
  parts: { partNumber: number; sha256: string }[],
): Promise<{ upload: MultipartAnswer; saved: Promise<void> } | undefined> {
  const { name, size, contentType } = file;
  const declaration = { name, size, contentType, encoding: "identity" as const };
  const declare = async (withParts: boolean) => {
    try {
      const body = { ...declaration, hashAtComplete: true as const };
      return await relay.declareUpload(withParts ? { ...body, parts } : body);
    } catch (err) {
      const older = err instanceof RefusalError && err.body.code === "invalid_request";
      if (older) return undefined;
      throw err;
    }
  };
  const answer = (await declare(true)) ?? (await declare(false));
  if (answer?.status !== "multipart" || !Array.isArray(answer.missing)) return undefined;
  const partSize = partSizeFor(size);
  const saved = states.save({
    ...key,
    sha256: "",
    encoding: "identity",
    storedSize: size,
    storedSha256: "",
    partSize,
    uploadId: answer.uploadId,
    createdAt: new Date().toISOString(),
  });
  return { upload: answer, saved };
}

/** The saved upload as the relay has it now; undefined (and forgotten) when it is gone. */
export async function resumed(
  { relay, states }: SendContext,
  key: UploadKey,
  uploadId: string,
  file: FirstByteFile,
): Promise<MultipartAnswer | { status: "completed"; file: FileRecord } | undefined> {
  try {
    const state = await relay.uploadState(uploadId, file.name);
    if (state.status === "completed") return state;
    if (state.status === "multipart" && Array.isArray(state.missing)) return state;
  } catch (err) {
    if (!(err instanceof RefusalError)) throw err;
  }
  await states.remove(key);
  return undefined;
}

/** The file's parts as they are read: their digests so far, and the whole hash once started. */
interface Reading {
  source: PartSource;
  partSha256: string[];
  wholeHash: () => Promise<{ size: number; sha256: string }>;
  /** The upload's state file, written (or given up) once this settles. */
  saved: Promise<void>;
}

/** PUTs the parts `upload` lacks as they are hashed, then completes with the whole hash. */
async function sendParts(
  ctx: SendContext,
  key: UploadKey,
  file: FirstByteFile,
  upload: MultipartAnswer,
  { source, partSha256, wholeHash, saved }: Reading,
): Promise<Sent & { sha256: string }> {
  const { relay, policy, concurrency, adaptive } = ctx;
  const { path, name, size } = file;
  const { partSize } = source;
  if (upload.partSize !== partSize || upload.partCount !== partSha256.length) {
    throw new CliError(`relay planned the parts of ${name} differently than airlock did`);
  }
  const job: PartsJob = {
    path,
    storedSize: size,
    partSize,
    partSha256,
    label: name,
    policy,
    concurrency,
    adaptive,
  };
  const { uploadId } = upload;
  const putMissing = async (missing: number[], known: PartUpload[]) => {
    const sign = (parts: { partNumber: number; sha256: string }[]) =>
      relay.signParts(uploadId, name, parts);
    const signer = new PartSigner(source, missing, sign, concurrency, partSha256, known);
    try {
      return await eachPart(missing, job, async (index, progress, signal, sent) => {
        await putPart(await signer.urlFor(index), job, progress, signal, sent);
        void wholeHash();
      });
    } finally {
      signer.stop();
    }
  };
  onInterrupt(() => resumeHint(relay, uploadId, { name, storedSize: size }));
  try {
    let uploadedBytes = await putMissing(upload.missing ?? [], upload.parts);
    const whole = await wholeHash();
    await saved; // before complete, so that the state file is removed after it, not before
    // The parts and the whole were read separately; a file written meanwhile is named so.
    const now = await stat(path).catch(() => undefined);
    if (whole.size !== size || now?.size !== size || now.mtimeMs !== file.mtimeMs) {
      throw changedWhileSending(path);
    }
    let record: FileRecord;
    try {
      record = await relay.completeUpload(uploadId, name, whole.sha256);
    } catch (err) {
      // A part the store lost (or never acknowledged): send what it lacks, complete again.
      if (!(err instanceof RefusalError && err.body.code === "upload_incomplete")) throw err;
      const state = await relay.uploadState(uploadId, name);
      if (state.status !== "multipart" || !state.missing) throw err;
      uploadedBytes += await putMissing(state.missing, []);
      record = await relay.completeUpload(uploadId, name, whole.sha256);
    }
    await ctx.states.remove(key);
    return { file: record, deduped: record.deduped, uploadedBytes, sha256: whole.sha256 };
  } finally {
    onInterrupt(undefined);
  }
}
