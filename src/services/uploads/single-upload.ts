import { createHash } from "node:crypto";
import { z } from "zod";
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
import { digestMembers } from "../../content/gzip-member-digest";
import { newId } from "../../ids";
import { logEvent } from "../../log";
import { uploadKey } from "../../storage";
import { ContentRejectedError } from "../../storage/blob-store";
import type { MemberTable } from "../../content/gzip-members";
import { declareUploadBody } from "./declare-upload";
import { fileOfUpload } from "./complete-upload";
import {
  checkDeclaredSize,
  quotaExceeded,
  storedBytesRefusal,
  sizeMismatch,
} from "./declared-limits";
import { toFileRecord, type FileRecord } from "../file-record";
import { rejectUpload } from "./reject-upload";
import { SINGLE_UPLOAD_MAX_BYTES } from "./single-upload-limit";
import { blobOf } from "./verify-upload";

export { SINGLE_UPLOAD_MAX_BYTES } from "./single-upload-limit";

const decimal = z
  .string()
  .regex(/^\d{1,16}$/, "must be a whole number")
  .transform(Number);

/** The query of `POST /v1/single-uploads`: a declaration's fields; `storedSize` is the body's length. */
const singleUploadQuery = z
  .object({
    name: z.string(),
    size: decimal,
    sha256: z.string(),
    contentType: z.string().optional(),
    encoding: z.string(),
    storedSha256: z.string(),
    /** The gzip member table (docs/api.md): `memberSpan=<span>&memberSizes=<s1>,<s2>,...`. */
    memberSpan: decimal.optional(),
    memberSizes: z
      .string()
      .regex(/^\d{1,16}(,\d{1,16}){0,9999}$/, "must be whole numbers separated by commas")
      .transform((sizes) => sizes.split(",").map(Number))
      .optional(),
  })
  .strict()
  .refine((q) => (q.memberSpan === undefined) === (q.memberSizes === undefined), {
    message: "memberSpan and memberSizes go together",
    path: ["memberSpan"],
  });

type SingleUploadQuery = z.infer<typeof singleUploadQuery>;

/** A one-request upload as it arrives: what it declares, and the stored bytes. */
export interface SingleUpload {
  /** The request's query, checked here (`singleUploadQuery`). */
  query: Record<string, string>;
  contentLength: string | undefined;
  body: ReadableStream<Uint8Array> | null;
  /** The `Idempotency-Key` header, if sent; checked here (`idempotencyKeyOf`). */
  idempotencyKey: string | undefined;
}

/** A one-request declaration, checked as a declare's body is; the stored fields always given. */
interface SingleDeclared {
  name: string;
  size: number;
  sha256: string;
  contentType?: string | undefined;
  encoding: "identity" | "gzip";
  storedSize: number;
  storedSha256: string;
  members?: MemberTable | undefined;
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

/** The declaration a one-request upload makes, checked as a declare's body is. */
function parseDeclaration(
  query: SingleUploadQuery,
  contentLength: string | undefined,
): SingleDeclared {
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
  const { memberSpan, memberSizes, ...fields } = query;
  const members =
    memberSpan === undefined || memberSizes === undefined
      ? undefined
      : { span: memberSpan, storedSizes: memberSizes };
  const result = declareUploadBody.safeParse({ ...fields, members, storedSize });
  if (!result.success) throw invalidRequest(result.error);
  const { encoding = "identity", storedSha256 = query.storedSha256 } = result.data;
  return { ...result.data, encoding, storedSize, storedSha256 };
}

/** A failed zod check as the relay's 400, worded as `readJson` words a bad body. */
function invalidRequest(error: z.ZodError): AppError {
  const issue = error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  return new AppError("invalid_request", `${where}${issue?.message ?? "invalid request"}`);
}

/**
 * Reads the body (at most `SINGLE_UPLOAD_MAX_BYTES`, natively: no script runs per chunk),
 * hashes it and, for gzip, inflates it (cut off at the declared size; with a member table,
 * member by member, each cut off at its span) and hashes the original bytes; only bytes that are exactly the declared ones go to the upload's key, where the
 * store verifies the stored SHA-256 again. Throws `length_mismatch` for a body that is not
 * `storedSize` bytes long and `content_mismatch` for any other difference.
 */
async function storeChecked(deps: Deps, upload: Upload, body: ReadableStream<Uint8Array>) {
  const bytes = await readExactly(body, upload.storedSize);
  if (sha256Hex(bytes) !== upload.storedSha256) throw contentMismatch();
  if (upload.encoding === "gzip") {
    // With a member table, each member inflates on its own to its span and ends at its size;
    // without, the bytes are one member inflating to the declared size.
    const table = upload.members ?? { span: upload.size, storedSizes: [bytes.byteLength] };
    const stored = new Blob([bytes]).stream();
    const original = await digestMembers(stored, table, upload.size).catch(() => null);
    if (original?.sha256Hex !== upload.sha256) throw contentMismatch();
  }
  const expected = { size: upload.storedSize, sha256Hex: upload.storedSha256 };
  await deps.store.put(upload.storedKey, bytes, expected).catch((error: unknown) => {
    if (!(error instanceof ContentRejectedError)) throw error;
    throw error.reason === "length" ? lengthMismatch(upload) : contentMismatch();
  });
}

/** The whole body, which must be exactly `size` bytes long. */
async function readExactly(body: ReadableStream<Uint8Array>, size: number): Promise<Uint8Array> {
  const exact = new FixedLengthStream(size);
  const piped = body.pipeTo(exact.writable);
  const read = new Response(exact.readable).arrayBuffer();
  const [pipe, bytes] = await Promise.allSettled([piped, read]);
  if (pipe.status === "rejected" || bytes.status === "rejected")
    throw lengthMismatch({ storedSize: size });
  return new Uint8Array(bytes.value);
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function lengthMismatch(upload: Pick<Upload, "storedSize">): AppError {
  return new AppError("length_mismatch", `the body was not ${upload.storedSize} bytes long`);
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

function contentMismatch(): AppError {
  return new AppError(
    "content_mismatch",
    "the uploaded bytes are not the declared content (size or SHA-256); nothing was kept",
  );
}
