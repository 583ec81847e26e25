import { z } from "zod";
import { upsertBlob } from "../db/blobs";
import { insertFileOfUploadStatement } from "../db/files";
import type { Session } from "../db/sessions";
import { completeUploadStatement, findUpload, type Upload } from "../db/uploads";
import type { Deps } from "../deps";
import { AppError } from "../errors";
import { digestExactly, passThroughDigest } from "../content/stream-digest";
import { ContentRejectedError } from "../storage/blob-store";
import { declareUpload, declareUploadBody } from "./declare-upload";
import { fileOfUpload } from "./complete-upload";
import { toFileRecord, type FileRecord } from "./file-record";
import { rejectUpload } from "./reject-upload";
import { SINGLE_UPLOAD_MAX_BYTES } from "./single-upload-limit";
import { blobOf } from "./verify-upload";

export { SINGLE_UPLOAD_MAX_BYTES } from "./single-upload-limit";

const decimal = z
  .string()
  .regex(/^\d{1,16}$/, "must be a whole number")
  .transform(Number);

/** The query of `POST /v1/single-uploads`: a declaration's fields; `storedSize` is the body's length. */
export const singleUploadQuery = z
  .object({
    name: z.string(),
    size: decimal,
    sha256: z.string(),
    contentType: z.string().optional(),
    encoding: z.string(),
    storedSha256: z.string(),
  })
  .strict();

export type SingleUploadQuery = z.infer<typeof singleUploadQuery>;

/** A one-request upload: what it declares, and the stored bytes as they arrive. */
export interface SingleUpload {
  query: SingleUploadQuery;
  contentLength: string | undefined;
  body: ReadableStream<Uint8Array> | null;
}

/**
 * Declares, stores, verifies and registers a small file in one request. The declaration is
 * `declareUpload`'s own, so its checks (name rule, `MAX_FILE_BYTES`, quota, size of the
 * content) and its dedup answer are exactly a declare's: a hit within the caller's owner
 * scope returns its file and the body is never read; content held elsewhere changes nothing.
 * Otherwise the body streams to the upload's own key while the relay hashes it and, for gzip,
 * inflates it (cut off at the declared size): the file is verified when it is registered, and
 * bytes that are not the declared ones answer `422 content_mismatch` with nothing kept. Like
 * every completed upload it goes on the verify queue, where its stored copy is settled (one
 * per content), so the answer costs the same whatever other scopes hold.
 */
export async function singleUpload(
  deps: Deps,
  session: Session,
  upload: SingleUpload,
  origin: string,
): Promise<FileRecord> {
  const declaration = parseDeclaration(upload);
  const answer = await declareUpload(deps, session, declaration, origin);
  if (answer.status === "deduped") return answer.file;
  if (answer.status !== "upload") throw new Error(`declare answered ${answer.status}`);
  const pending = await findUpload(deps.db, answer.uploadId);
  if (!pending) throw new Error(`upload ${answer.uploadId} vanished`);
  try {
    await storeChecked(deps, pending, upload.body ?? new Blob([]).stream());
  } catch (error) {
    // Nothing of a refused (or broken-off) body is kept, and its bytes stop holding quota.
    await rejectUpload(deps, pending);
    throw error;
  }
  return register(deps, pending, origin);
}

/** The declaration a one-request upload makes, checked as a declare's body is. */
function parseDeclaration({ query, contentLength }: SingleUpload) {
  if (contentLength === undefined) throw new AppError("length_required");
  if (!/^\d{1,16}$/.test(contentLength)) {
    throw new AppError("invalid_request", "Content-Length must be a whole number");
  }
  const storedSize = Number(contentLength);
  if (storedSize > SINGLE_UPLOAD_MAX_BYTES) {
    throw new AppError(
      "payload_too_large",
      `${storedSize} stored bytes are over the ${SINGLE_UPLOAD_MAX_BYTES}-byte limit of a ` +
        "one-request upload; declare it with POST /v1/uploads",
    );
  }
  const result = declareUploadBody.safeParse({ ...query, storedSize });
  if (!result.success) throw invalidRequest(result.error);
  return result.data;
}

/** A failed zod check as the relay's 400, worded as `readJson` words a bad body. */
export function invalidRequest(error: z.ZodError): AppError {
  const issue = error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  return new AppError("invalid_request", `${where}${issue?.message ?? "invalid request"}`);
}

/**
 * Streams the body to the upload's key with the store verifying the stored SHA-256, hashing
 * it on the way as well; a gzip body is inflated alongside and must come to exactly the
 * declared size and SHA-256. Throws `content_mismatch` when any of it is not as declared.
 */
async function storeChecked(deps: Deps, upload: Upload, body: ReadableStream<Uint8Array>) {
  const expected = { size: upload.storedSize, sha256Hex: upload.storedSha256 };
  if (upload.storedSize === 0) {
    // No bytes to stream (and a zero-length stream stalls R2's put): the store checks the hash.
    await deps.store.put(upload.storedKey, new Uint8Array(0), expected).catch((error: unknown) => {
      throw error instanceof ContentRejectedError ? contentMismatch() : error;
    });
    return;
  }
  let received = 0;
  const counted = body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        received += chunk.byteLength;
        controller.enqueue(chunk);
      },
    }),
  );
  const hashing = passThroughDigest();
  const [toStore, toInflate] =
    upload.encoding === "gzip" ? counted.tee() : [counted, undefined as undefined];
  const stored = deps.store.put(upload.storedKey, toStore.pipeThrough(hashing.transform), expected);
  const original = toInflate
    ? digestExactly(toInflate.pipeThrough(new DecompressionStream("gzip")), upload.size)
    : null;
  const [put, inflated] = await Promise.allSettled([stored, original]);
  if (put.status === "rejected") {
    const rejected = put.reason instanceof ContentRejectedError ? put.reason : null;
    if (received !== upload.storedSize || rejected?.reason === "length") {
      throw new AppError("length_mismatch", `the body was not ${upload.storedSize} bytes long`);
    }
    throw rejected ? contentMismatch() : put.reason;
  }
  const digest = await hashing.result;
  const storedMatches =
    digest.size === upload.storedSize && digest.sha256Hex === upload.storedSha256;
  const originalMatches =
    inflated.status === "fulfilled" &&
    (inflated.value === null || inflated.value.sha256Hex === upload.sha256);
  if (!storedMatches || !originalMatches) throw contentMismatch();
}

/** Completes the upload and inserts its file, verified, in one transaction; queues the settling. */
async function register(deps: Deps, upload: Upload, origin: string): Promise<FileRecord> {
  const now = deps.now();
  const file = fileOfUpload(deps, upload, true, now);
  const [completed] = await deps.db.batch([
    completeUploadStatement(deps.db, upload.id, file.id, now),
    insertFileOfUploadStatement(deps.db, file, upload.id),
  ]);
  // Declared a moment ago in this very request: nothing else can complete or expire it.
  if (completed?.meta.changes !== 1) throw new Error(`upload ${upload.id} was not pending`);
  // The file went in verified, on the upload's own object: only the content's blob is left.
  await upsertBlob(deps.db, blobOf(upload, file));
  await deps.verifyQueue.send({ uploadId: upload.id, fileId: file.id });
  return toFileRecord(deps, file, origin);
}

function contentMismatch(): AppError {
  return new AppError(
    "content_mismatch",
    "the uploaded bytes are not the declared content (size or SHA-256); nothing was kept",
  );
}
