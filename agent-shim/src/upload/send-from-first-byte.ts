import { createHash } from "node:crypto";
import { open, stat, type FileHandle } from "node:fs/promises";
import { CliError, RefusalError, fsError } from "../cli/errors.js";
import type { FileRecord, MultipartAnswer, PartUpload } from "../transport/relay-client.js";
import { partCount, partLength, partSizeFor } from "../../../src/part-plan.js";
import { eachPart, putPart, type PartsJob } from "./multipart-upload.js";
import { PASS_CHUNK_BYTES, changedWhileSending } from "./prepare.js";
import { resumeHint, type SendContext, type Sent } from "./send-stored.js";
import { onInterrupt } from "./temp-files.js";
import { UploadStates, type UploadKey } from "./upload-state.js";
import { hashWholeAside } from "./whole-hash-aside.js";

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
 * the first byte"): the upload is declared without its hashes, each part is hashed when its
 * turn comes, signed with that digest and PUT (checked against it on the way out, so a file
 * changing under us is named as that), while another thread hashes the whole file for
 * `complete`. A dedup hit is found there. The upload is saved, so a later `send` of the file
 * resumes it. Undefined when this way is not open: the relay predates it, or a saved upload
 * of the file declared with its hashes is waiting to be resumed the hashed way.
 */
export async function sendFromFirstByte(
  ctx: SendContext,
  file: FirstByteFile,
): Promise<(Sent & { sha256: string }) | undefined> {
  const { relay, states } = ctx;
  const key = UploadStates.key(relay.url, file.path, file.size, file.mtimeMs);
  const saved = await states.load(key);
  if (saved && saved.sha256 !== "") return undefined;
  const whole = hashWholeAside(file.path);
  try {
    const upload = saved ? await resumed(ctx, key, saved.uploadId, file) : undefined;
    if (upload?.status === "completed") {
      await states.remove(key);
      const { file: record } = upload;
      return { file: record, deduped: record.deduped, uploadedBytes: 0, sha256: record.sha256 };
    }
    const started = upload ?? (await declared(ctx, key, file));
    if (!started) return undefined;
    return await sendParts(ctx, key, file, started, whole.hashed);
  } finally {
    whole.stop();
  }
}

/** Declares the file without its hashes; undefined from a relay that does not take that. */
async function declared(
  { relay, states }: SendContext,
  key: UploadKey,
  file: FirstByteFile,
): Promise<MultipartAnswer | undefined> {
  const { name, size, contentType } = file;
  const declaration = { name, size, contentType, encoding: "identity" as const };
  let answer;
  try {
    answer = await relay.declareUpload({ ...declaration, hashAtComplete: true as const });
  } catch (err) {
    const older = err instanceof RefusalError && err.body.code === "invalid_request";
    if (older) return undefined;
    throw err;
  }
  if (answer.status !== "multipart" || !Array.isArray(answer.missing)) return undefined;
  const partSize = partSizeFor(size);
  await states.save({
    ...key,
    sha256: "",
    encoding: "identity",
    storedSize: size,
    storedSha256: "",
    partSize,
    uploadId: answer.uploadId,
    createdAt: new Date().toISOString(),
  });
  return answer;
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

/** PUTs the parts `upload` lacks as they are hashed, then completes with the whole hash. */
async function sendParts(
  ctx: SendContext,
  key: UploadKey,
  file: FirstByteFile,
  upload: MultipartAnswer,
  hashed: Promise<{ size: number; sha256: string }>,
): Promise<Sent & { sha256: string }> {
  const { relay, policy, concurrency } = ctx;
  const { path, name, size } = file;
  const partSize = partSizeFor(size);
  const count = partCount(size, partSize);
  if (upload.partSize !== partSize || upload.partCount !== count) {
    throw new CliError(`relay planned the parts of ${name} differently than airlock did`);
  }
  const job: PartsJob = {
    path,
    storedSize: size,
    partSize,
    partSha256: new Array<string>(count).fill(""),
    label: name,
    policy,
    concurrency,
  };
  const { uploadId } = upload;
  const handle = await open(path, "r").catch((err: unknown) => {
    throw fsError("read", path, err);
  });
  // One part hashed at a time, in order: the first part is ready after its own bytes alone.
  let turn: Promise<unknown> = Promise.resolve();
  const digestOf = (n: number): Promise<string> => {
    const digest = turn.then(() => hashPart(handle, path, partSize, size, n));
    turn = digest.catch(() => undefined);
    return digest;
  };
  const unexpected = () => new CliError(`relay gave an unexpected answer to the upload of ${name}`);
  const putMissing = (missing: number[]) => {
    // The first part is signed alone, so it leaves once its own bytes are hashed; later ones
    // are hashed ahead and signed `concurrency` at a time, one request to the relay for each.
    const urls = new Map<number, Promise<PartUpload>>();
    let batch = 1;
    const urlFor = (index: number): Promise<PartUpload> => {
      const known = urls.get(index);
      if (known) return known;
      const indexes: number[] = [];
      for (let i = index; i < missing.length && indexes.length < batch && !urls.has(i); i++) {
        indexes.push(i);
      }
      batch = concurrency;
      const signed = (async () => {
        const parts: { partNumber: number; sha256: string }[] = [];
        for (const partNumber of indexes.map((i) => missing[i]!)) {
          const sha256 = (job.partSha256[partNumber - 1] ||= await digestOf(partNumber));
          parts.push({ partNumber, sha256 });
        }
        const answer = await relay.signParts(uploadId, name, parts);
        return new Map(answer.map((part) => [part.partNumber, part]));
      })();
      for (const i of indexes) {
        const part = signed.then((found) => found.get(missing[i]!) ?? Promise.reject(unexpected()));
        part.catch(() => undefined); // awaited by the part's own turn, if it comes
        urls.set(i, part);
      }
      return urls.get(index)!;
    };
    return eachPart(missing, job, async (index, progress, signal) =>
      putPart(await urlFor(index), job, progress, signal),
    );
  };
  onInterrupt(() => resumeHint(relay, uploadId, { name, storedSize: size }));
  try {
    let uploadedBytes = await putMissing(upload.missing ?? []);
    const whole = await hashed;
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
      uploadedBytes += await putMissing(state.missing);
      record = await relay.completeUpload(uploadId, name, whole.sha256);
    }
    await ctx.states.remove(key);
    return { file: record, deduped: record.deduped, uploadedBytes, sha256: whole.sha256 };
  } finally {
    onInterrupt(undefined);
    await handle.close();
  }
}

/** The SHA-256 of part `n` of the file, read from disk. */
async function hashPart(
  handle: FileHandle,
  path: string,
  partSize: number,
  size: number,
  n: number,
): Promise<string> {
  const hash = createHash("sha256");
  const start = (n - 1) * partSize;
  const length = partLength(size, partSize, n);
  const chunk = Buffer.allocUnsafe(Math.min(PASS_CHUNK_BYTES, length));
  for (let done = 0; done < length;) {
    const want = Math.min(chunk.length, length - done);
    const { bytesRead } = await handle.read(chunk, 0, want, start + done).catch((err: unknown) => {
      throw fsError("read", path, err);
    });
    if (bytesRead === 0) throw changedWhileSending(path);
    hash.update(chunk.subarray(0, bytesRead));
    done += bytesRead;
  }
  return hash.digest("hex");
}
