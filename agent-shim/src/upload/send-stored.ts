import type { RetryPolicy } from "../cli/config.js";
import { CliError, RefusalError } from "../cli/errors.js";
import { putParts, type PartsJob } from "./multipart-upload.js";
import { digestFileParts, digestsFit } from "./part-digests.js";
import type { StoredBytes } from "./prepare.js";
import type {
  FileRecord,
  MultipartAnswer,
  RelayClient,
  UploadAnswer,
  UploadDeclaration,
} from "../transport/relay-client.js";
import { putStoredBytes } from "./upload.js";
import { UploadStates, type SavedUpload, type UploadKey } from "./upload-state.js";
import { SINGLE_UPLOAD_MAX_BYTES, sendInOneRequest } from "./one-request.js";
import { onInterrupt } from "./temp-files.js";
import { humanSize } from "../../../src/services/human-size.js";
import { partLength, partSizeFor } from "../../../src/part-plan.js";
import { multipartThreshold } from "./multipart-threshold.js";

/** Everything `sendStored` needs besides the file. */
export interface SendContext {
  relay: RelayClient;
  policy: RetryPolicy;
  /** Parts in flight at once (at most, when `adaptive`). */
  concurrency: number;
  /** One part's bytes at a time until the first shows more pay (`eachPart`); absent: all at once. */
  adaptive?: boolean;
  states: UploadStates;
}

/** A file's declaration, complete with its stored form (and its member table, for gzip members). */
export type FullDeclaration = Required<Omit<UploadDeclaration, "partSha256" | "members">> &
  Pick<UploadDeclaration, "members">;

/** What is sent: its declaration, its stored bytes, and where it came from (to resume it). */
export interface StoredSend {
  declaration: FullDeclaration;
  stored: StoredBytes;
  /**
   * The file or directory sent and its mtime then: with the size, what names a saved upload.
   * Absent for standard input, which a later run cannot read again: its upload is not saved.
   */
  source?: { path: string; mtimeMs: number };
}

/** How a send ended. */
export interface Sent {
  file: FileRecord;
  deduped: boolean;
  /** Stored bytes PUT successfully by this run. */
  uploadedBytes: number;
}

/**
 * Declares the stored form, stores the bytes and completes the upload. Up to the one-request
 * limit (about 1 MiB) that is one request to the relay; up to the multipart threshold, a
 * declaration, one PUT and a completion; above it the bytes go up in parts, several at once, and the upload
 * is saved so that a later `send` of the same bytes (after a failure, or a killed run) resumes
 * it: only the parts the store does not hold go up again.
 */
export async function sendStored(ctx: SendContext, send: StoredSend): Promise<Sent> {
  const job = withMemberTable(send);
  if (job.declaration.storedSize <= SINGLE_UPLOAD_MAX_BYTES) {
    const sent = await sendInOneRequest(ctx.relay, job.declaration, job.stored);
    if (sent) return sent;
  }
  if (job.declaration.storedSize > multipartThreshold()) return sendInParts(ctx, job);
  const answer = await ctx.relay.declareUpload(job.declaration);
  if (answer.status === "deduped") return { file: answer.file, deduped: true, uploadedBytes: 0 };
  return sendWhole(ctx, job, answer);
}

/** The send with the stored bytes' member table in its declaration, when they have one. */
function withMemberTable(job: StoredSend): StoredSend {
  const { members } = job.stored;
  if (!members || job.declaration.encoding !== "gzip") return job;
  return { ...job, declaration: { ...job.declaration, members } };
}

/** One PUT of all the stored bytes, as the relay's answer to a declaration asks. */
async function sendWhole(ctx: SendContext, job: StoredSend, answer: UploadAnswer): Promise<Sent> {
  const { name, storedSize } = job.declaration;
  if (answer.status === "missing") throw new CliError(`relay asked again how ${name} is stored`);
  if (answer.status !== "upload") {
    throw new CliError(`relay gave an unexpected answer to the upload of ${name}`);
  }
  await putStoredBytes(answer.put, job.stored, name, ctx.policy);
  const file = await ctx.relay.completeUpload(answer.uploadId, name);
  return { file, deduped: false, uploadedBytes: storedSize };
}

async function sendInParts(ctx: SendContext, job: StoredSend): Promise<Sent> {
  const { relay, states } = ctx;
  const { declaration, stored, source } = job;
  const { name, size, storedSize } = declaration;
  const partSize = partSizeFor(size);
  // Taken on the way where the stored bytes were made; a pass of its own otherwise.
  const partSha256 = digestsFit(stored.partSha256, size, storedSize)
    ? stored.partSha256
    : await digestFileParts(stored.path, partSize);
  const key = source && UploadStates.key(relay.url, source.path, size, source.mtimeMs);
  const parts: PartsJob = {
    path: stored.path,
    storedSize,
    partSize,
    partSha256,
    label: name,
    policy: ctx.policy,
    concurrency: ctx.concurrency,
    adaptive: ctx.adaptive,
  };

  let upload = key && (await resumable(ctx, job, key, partSize));
  if (upload?.status === "completed") {
    if (key) await states.remove(key);
    return { file: upload.file, deduped: false, uploadedBytes: 0 };
  }
  if (!upload) {
    const answer = await relay.declareUpload({ ...declaration, partSha256 });
    if (answer.status === "deduped") return { file: answer.file, deduped: true, uploadedBytes: 0 };
    if (answer.status !== "multipart") return sendWhole(ctx, job, answer); // A relay without parts.
    upload = answer;
    const createdAt = new Date().toISOString();
    if (key) {
      await states.save({
        ...key,
        ...storedForm(declaration),
        partSize,
        uploadId: upload.uploadId,
        createdAt,
      });
    }
  }

  const { uploadId } = upload;
  // Saved: a Ctrl-C from here on is worth a line on how to pick the upload up again.
  if (key) onInterrupt(() => resumeHint(relay, uploadId, declaration));
  let uploadedBytes: number;
  try {
    uploadedBytes = await putParts(upload, parts);
  } finally {
    onInterrupt(undefined);
  }
  let file: FileRecord;
  try {
    file = await relay.completeUpload(uploadId, name);
  } catch (err) {
    // A part the store lost (or never acknowledged): send what it lacks, complete once more.
    if (!(err instanceof RefusalError && err.body.code === "upload_incomplete")) throw err;
    const now = await relay.uploadState(uploadId, name);
    if (now.status === "completed") {
      file = now.file;
    } else if (now.status === "multipart") {
      uploadedBytes += await putParts(now, parts);
      file = await relay.completeUpload(uploadId, name);
    } else {
      throw err;
    }
  }
  if (key) await states.remove(key);
  return { file, deduped: false, uploadedBytes };
}

/**
 * The line a Ctrl-C prints during a saved multipart upload: run the same command again to
 * resume, and how much of it the store holds by now (asked of the relay; without it when the
 * relay cannot say).
 */
export async function resumeHint(
  relay: RelayClient,
  uploadId: string,
  { name, storedSize }: Pick<FullDeclaration, "name" | "storedSize">,
): Promise<string> {
  const again = `interrupted: run the same command again to resume the upload of ${name}`;
  try {
    const state = await relay.uploadState(uploadId, name);
    if (state.status !== "multipart") return again;
    // An upload declared with hashAtComplete lists its missing parts by number.
    const numbers = state.missing ?? state.parts.map((part) => part.partNumber);
    const missing = numbers.reduce(
      (sum, partNumber) => sum + partLength(storedSize, state.partSize, partNumber),
      0,
    );
    return `${again} (${humanSize(storedSize - missing)} of ${humanSize(storedSize)} stored)`;
  } catch {
    return again;
  }
}

/**
 * The saved upload of these very bytes, as the relay has it now: still missing parts, or
 * completed after all. Undefined (and forgotten) when there is none, it was of other bytes, or
 * the relay no longer has it, expired or rejected it.
 */
async function resumable(
  { relay, states }: SendContext,
  { declaration }: StoredSend,
  key: UploadKey,
  partSize: number,
): Promise<MultipartAnswer | { status: "completed"; file: FileRecord } | undefined> {
  const saved = await states.load(key);
  if (!saved) return undefined;
  const expected = storedForm(declaration);
  const same =
    saved.sha256 === expected.sha256 &&
    saved.encoding === expected.encoding &&
    saved.storedSize === expected.storedSize &&
    saved.storedSha256 === expected.storedSha256 &&
    saved.partSize === partSize;
  if (same) {
    try {
      const state = await relay.uploadState(saved.uploadId, declaration.name);
      if (state.status === "completed") return state;
      if (state.status === "multipart" && state.uploadId === saved.uploadId) return state;
    } catch (err) {
      // 404 upload_not_found, 409 upload_rejected, 410 upload_expired and any other final
      // refusal: start afresh (a fresh declaration reports a real problem on its own).
      if (!(err instanceof RefusalError)) throw err;
    }
  }
  await states.remove(key);
  return undefined;
}

/** The fields of a saved upload that say which bytes it stores. */
function storedForm(
  d: FullDeclaration,
): Pick<SavedUpload, "sha256" | "encoding" | "storedSize" | "storedSha256"> {
  const { sha256, encoding, storedSize, storedSha256 } = d;
  return { sha256, encoding, storedSize, storedSha256 };
}
