import {
  findFileByIdempotencyKey,
  insertFileOfUploadStatement,
  isIdempotencyKeyTaken,
  setIdempotencyKeyStatement,
  type FileRow,
} from "../../db/files";
import { declareSingleUpload, upsertBlobOfUploadStatement } from "../../db/single-uploads";
import { memberTableStatement } from "../../db/gzip-members";
import { completeUploadStatement, type Upload } from "../../db/uploads";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { checkLive, liveSession } from "../../auth/live-session";
import { idempotencyKeyOf } from "../idempotency-key";
import { newId } from "../../ids";
import { logEvent } from "../../log";
import { uploadKey } from "../../storage";
import { fileOfUpload } from "./complete-upload";
import {
  checkDeclaredSize,
  quotaExceeded,
  storedBytesRefusal,
  sizeMismatch,
} from "./declared-limits";
import { toFileRecord, type FileRecord } from "../file-record";
import { storeChecked } from "./single-upload-bytes";
import { invalidRequest } from "../validation";
import { parseDeclaration, singleUploadQuery, type SingleDeclared } from "./single-upload-query";
import { rejectUpload } from "./reject-upload";
import { blobOf } from "./verify-upload";

export { SINGLE_UPLOAD_MAX_BYTES } from "./single-upload-limit";

/** A one-request upload as it arrives: what it declares, and the stored bytes. */
export interface SingleUpload {
  /** The request's query, checked here (`singleUploadQuery`). */
  query: Record<string, string>;
  contentLength: string | undefined;
  body: ReadableStream<Uint8Array> | null;
  /** The `Idempotency-Key` header, if sent; checked here (`idempotencyKeyOf`). */
  idempotencyKey: string | undefined;
}

/**
 * Declares, stores, verifies and registers a small file in one request, for the session
 * `sessionId` whose token was checked but whose row was not read yet. The declaration
 * follows `declareUpload`'s rules (name rule, `MAX_FILE_BYTES`, quota, size of the content)
 * with its codes and messages, and its dedup answer: a hit within the caller's owner scope
 * returns its file and the body is never read; content held elsewhere changes nothing. It
 * costs one D1 round trip (`declareSingleUpload`), which reads the session's row too and
 * writes nothing unless the session is live; its refusal comes first, as on every session
 * route. Otherwise the body is read and checked before it is stored on the upload's own key
 * (`storeChecked`): the file is verified when it is registered (one more round trip), and
 * bytes that are not the declared ones answer `422 content_mismatch` with nothing kept. Like
 * every completed upload it goes on the verify queue, where its stored copy is settled (one
 * per content), so the answer costs the same whatever other scopes hold.
 *
 * With an `Idempotency-Key` the file carries the key, set in the batch that inserts it; a key
 * the session gave a file already (a retry whose first answer was lost) makes that batch fail
 * whole, and the answer is the earlier file (`earlierFile`), never a second one; a key that
 * made another file (other content or name) is refused.
 */
export async function singleUpload(
  deps: Deps,
  sessionId: string,
  upload: SingleUpload,
  origin: string,
): Promise<FileRecord> {
  const { declared, idempotencyKey } = await checkedRequest(deps, sessionId, upload);
  const now = deps.now();
  const refusal = storedBytesRefusal(deps, declared);
  const pending = refusal ? null : pendingUpload(deps, sessionId, declared, now);
  const answer = await declareSingleUpload(deps.db, {
    sessionId,
    maxFileBytes: deps.config.maxFileBytes,
    dedupFile: dedupFile(deps, sessionId, declared, now),
    upload: pending,
    idempotencyKey,
    now,
  });
  const request = { sessionId, ...declared };
  if (answer.kind === "key_taken") return takenBy(deps, request, idempotencyKey, origin);
  checkDeclaredSize(deps, checkLive(answer.session, now), declared.size);
  if (answer.kind === "deduped") return toFileRecord(deps, answer.file, origin);
  if (answer.kind === "size_mismatch") throw sizeMismatch();
  if (answer.kind === "refused") {
    // A retry whose first attempt's file filled the quota: as a dedup hit it is over it.
    const earlier = await earlierFile(deps, request, idempotencyKey, origin);
    if (earlier) return earlier;
    // Over the quota, unless the content is not held and a rule of new uploads refused it.
    throw refusal && !answer.held ? refusal : quotaExceeded(declared.size);
  }
  if (!pending) throw new Error("an upload was recorded that was not declared");
  try {
    await storeChecked(deps, pending, upload.body ?? new Blob([]).stream());
  } catch (error) {
    // Nothing of a refused (or broken-off) body is kept, and its bytes stop holding quota.
    await rejectUpload(deps, pending);
    throw error;
  }
  return register(deps, pending, idempotencyKey, origin);
}

/**
 * The request's declaration and `Idempotency-Key`, checked before any lookup. A caller
 * whose session is over hears that rather than what is wrong with its request, as from
 * every session route: the session's row is read for it (only then).
 */
async function checkedRequest(
  deps: Deps,
  sessionId: string,
  upload: SingleUpload,
): Promise<{ declared: SingleDeclared; idempotencyKey: string | undefined }> {
  try {
    const query = singleUploadQuery.safeParse(upload.query);
    if (!query.success) throw invalidRequest(query.error);
    const idempotencyKey = idempotencyKeyOf(upload.idempotencyKey);
    return { declared: parseDeclaration(query.data, upload.contentLength), idempotencyKey };
  } catch (error) {
    await liveSession(deps, sessionId);
    throw error;
  }
}

/** What a request declares, to tell a retry of it from another file under the same key. */
type KeyedRequest = Pick<Upload, "sessionId" | "name" | "size" | "sha256">;

/**
 * The file the session made with this `Idempotency-Key` (a retry whose first answer was
 * lost), answered as it was the first time; null when there is none (or no key);
 * `409 idempotency_key_reused` when it was another file (other content or name) or once it
 * is gone.
 */
async function earlierFile(
  deps: Deps,
  request: KeyedRequest,
  key: string | undefined,
  origin: string,
): Promise<FileRecord | null> {
  const file =
    key === undefined ? null : await findFileByIdempotencyKey(deps.db, request.sessionId, key);
  if (!file) return null;
  if (file.sha256 !== request.sha256 || file.size !== request.size || file.name !== request.name) {
    throw new AppError(
      "idempotency_key_reused",
      `this Idempotency-Key made another file (${file.id}, ${file.name}); ` +
        "send this one with a new key",
    );
  }
  if (file.deletedAt != null || file.expiresAt <= deps.now()) {
    throw new AppError(
      "idempotency_key_reused",
      `the file this Idempotency-Key made (${file.id}) was deleted or has expired; ` +
        "send it again with a new key",
    );
  }
  logEvent("single_upload_replayed", { sessionId: file.sessionId, fileId: file.id });
  return toFileRecord(deps, file, origin);
}

/** `earlierFile` where the key was found taken: the file must be there. */
async function takenBy(
  deps: Deps,
  request: KeyedRequest,
  key: string | undefined,
  origin: string,
): Promise<FileRecord> {
  const earlier = await earlierFile(deps, request, key, origin);
  if (!earlier) throw new Error("an Idempotency-Key was taken by no file");
  return earlier;
}

/** The pending upload a declaration becomes, on a key of its own, until `UPLOAD_URL_TTL_SECONDS`. */
function pendingUpload(
  deps: Deps,
  sessionId: string,
  declared: SingleDeclared,
  now: number,
): Upload {
  const id = newId("upl");
  return {
    id,
    sessionId,
    name: declared.name,
    size: declared.size,
    sha256: declared.sha256,
    contentType: declared.contentType ?? "application/octet-stream",
    encoding: declared.encoding,
    storedKey: uploadKey(declared.storedSha256, id),
    storedSize: declared.storedSize,
    storedSha256: declared.storedSha256,
    status: "pending",
    createdAt: now,
    expiresAt: now + deps.config.uploadUrlTtlSeconds * 1000,
    fileId: null,
    multipart: null,
    members: declared.members ?? null,
  };
}

/** The file a dedup hit becomes; its stored key and encoding are the held file's, filled in by D1. */
function dedupFile(deps: Deps, sessionId: string, declared: SingleDeclared, now: number): FileRow {
  return {
    id: newId("fil"),
    sessionId,
    name: declared.name,
    size: declared.size,
    sha256: declared.sha256,
    contentType: declared.contentType ?? "application/octet-stream",
    encoding: "identity",
    storedKey: "",
    verified: true,
    deduped: true,
    createdAt: now,
    expiresAt: now + deps.config.fileTtlSeconds * 1000,
    origin: "sandbox",
  };
}

/**
 * Completes the upload, inserts its file (verified, with the `Idempotency-Key` if any) and
 * records its blob in one transaction, then queues the settling. When the session gave a file
 * the key already, nothing of the transaction lands and the upload is undone as a refused
 * body is: the answer is the earlier file.
 */
async function register(
  deps: Deps,
  upload: Upload,
  idempotencyKey: string | undefined,
  origin: string,
): Promise<FileRecord> {
  const now = deps.now();
  const file = fileOfUpload(deps, upload, true, now);
  const statements = [
    completeUploadStatement(deps.db, upload.id, file.id, now),
    insertFileOfUploadStatement(deps.db, file, upload.id),
    upsertBlobOfUploadStatement(deps.db, blobOf(upload, file), upload.id, file.id),
  ];
  if (upload.members) {
    statements.push(memberTableStatement(deps.db, upload.storedKey, upload.members, now));
  }
  if (idempotencyKey !== undefined) {
    statements.push(setIdempotencyKeyStatement(deps.db, file.id, idempotencyKey));
  }
  let completed: D1Result | undefined;
  try {
    [completed] = await deps.db.batch(statements);
  } catch (error) {
    if (!isIdempotencyKeyTaken(error)) throw error;
    await rejectUpload(deps, upload);
    return takenBy(deps, upload, idempotencyKey, origin);
  }
  // Declared a moment ago in this very request: nothing else can complete or expire it.
  if (completed?.meta.changes !== 1) throw new Error(`upload ${upload.id} was not pending`);
  await deps.verifyQueue.send({ uploadId: upload.id, fileId: file.id }).catch((error: unknown) =>
    // The file is verified already: a lost message only leaves it unsettled (on its own
    // stored copy, an archive unlisted).
    logEvent("verify_queue_send_failed", { uploadId: upload.id, error: String(error) }, "error"),
  );
  return toFileRecord(deps, file, origin);
}
