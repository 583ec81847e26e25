import { liveSession } from "../auth/live-session";
import {
  deleteFile,
  findFileByIdempotencyKey,
  isIdempotencyKeyTaken,
  setIdempotencyKeyStatement,
} from "../db/files";
import type { Session } from "../db/sessions";
import type { Deps } from "../deps";
import { AppError } from "../errors";
import { logEvent } from "../log";
import { fileNameProblem } from "../names";
import { toFileRecord, type FileRecord } from "../services/file-record";
import { ingest, roomFor } from "../services/inbox/ingest";
import { stageUnsized } from "../services/upload-links/staging";
import { mediaType } from "../services/validation";
import { guardedBody } from "./guarded-body";
import { shellWord } from "./shell-word";
import { createUploadToken, uploadNonce, verifyUploadToken } from "./transfer-tokens";

/**
 * `create_upload`: a URL the model's terminal PUTs one file to (`curl -T`), for a model that
 * cannot hand the relay a path. The URL is signed (no row until it is used) and single-use: the
 * file it makes carries the URL's nonce as its `Idempotency-Key` (`files_by_idempotency_key`),
 * so a second PUT finds it taken. A PUT that fails stores nothing and leaves the URL unused.
 */

/** What `create_upload` answers. */
export interface CreatedAgentUpload {
  url: string;
  name: string;
  maxBytes: number;
  expiresAt: string;
  command: string;
}

/** The idempotency key a file made through an upload URL carries. */
const keyOf = (nonce: string) => `mcp-upload:${nonce}`;

/**
 * Mints an upload URL for `name` (which must obey the one name rule, as any declared name
 * must). A `size` given is checked now against `MAX_FILE_BYTES`, what the session's quota has
 * left, and what one request through the relay may carry; the PUT checks them all again. The
 * URL lives `UPLOAD_URL_TTL_SECONDS`, never past the session.
 */
export async function createAgentUpload(
  deps: Deps,
  session: Session,
  args: { name: string; size?: number },
  origin: string,
): Promise<CreatedAgentUpload> {
  const problem = fileNameProblem(args.name);
  if (problem) throw new AppError("invalid_request", `name: ${problem}`);
  const relayLimit = deps.config.relayUploadMaxBytes;
  if (args.size !== undefined) {
    const { refusal } = await roomFor(deps, session.id, args.size);
    if (refusal) throw refusal;
    if (relayLimit !== undefined && args.size > relayLimit) throw overRelayLimit(relayLimit);
  }
  // Whole seconds, as the token carries them: rounded up, the URL lives at least the TTL.
  const expiresAt =
    Math.ceil(
      Math.min(deps.now() + deps.config.uploadUrlTtlSeconds * 1000, session.expiresAt) / 1000,
    ) * 1000;
  const token = await createUploadToken(deps.config.signingKey, {
    sessionId: session.id,
    name: args.name,
    ...(args.size !== undefined ? { size: args.size } : {}),
    expiresAt,
    nonce: uploadNonce(),
  });
  const url = `${origin}/mcp/uploads/${token}`;
  return {
    url,
    name: args.name,
    maxBytes: args.size ?? Math.min(deps.config.maxFileBytes, relayLimit ?? Infinity),
    expiresAt: new Date(expiresAt).toISOString(),
    command: `curl --fail-with-body -sS -T ${shellWord(args.name)} '${url}'`,
  };
}

/** A PUT to an upload URL, as it arrives. */
export interface AgentPut {
  contentLength: string | undefined;
  /** `gzip` when the body is gzip of the file (curl -T x.gz -H 'Content-Encoding: gzip'). */
  contentEncoding: string | undefined;
  contentType: string | undefined;
  body: ReadableStream<Uint8Array> | null;
}

/**
 * Stores a PUT's body as the session's file named by the URL, hashed by the relay on the way
 * in, and answers its record with a share link. A gzip body is inflated on the way (cut off at
 * the declared size, or `MAX_FILE_BYTES`). Refused with nothing kept: a URL used already
 * (`409 upload_already_completed`), expired or of an ended session (`410 upload_expired`),
 * bytes over the limits or the quota (`413`), a length other than the declared size (`400
 * length_mismatch`), a body that is not gzip when it says so (`400 invalid_request`).
 */
export async function receiveAgentUpload(
  deps: Deps,
  token: string,
  put: AgentPut,
  origin: string,
): Promise<FileRecord> {
  const grant = await verifyUploadToken(deps.config.signingKey, token, deps.now());
  await liveSession(deps, grant.sessionId).catch((error: unknown) => {
    if (!(error instanceof AppError)) throw error;
    throw new AppError("upload_expired", "this upload URL no longer works: its session has ended");
  });
  const key = keyOf(grant.nonce);
  if (await findFileByIdempotencyKey(deps.db, grant.sessionId, key)) throw usedUp();

  const gzip = encodingOf(put.contentEncoding);
  const stored = lengthOf(put.contentLength);
  const relayLimit = deps.config.relayUploadMaxBytes;
  if (stored !== undefined && relayLimit !== undefined && stored > relayLimit) {
    throw overRelayLimit(relayLimit);
  }
  // The original size: the body's own length, unless it is gzip; then what the model declared.
  const size = gzip ? grant.size : stored;
  if (grant.size !== undefined && size !== undefined && size !== grant.size) {
    throw new AppError(
      "length_mismatch",
      `the body is ${size} bytes; this upload URL was made for ${grant.size}`,
    );
  }
  const raw = put.body ?? new Blob([]).stream();
  const guarded = guardedBody(gzip ? raw.pipeThrough(new DecompressionStream("gzip")) : raw, size);
  const input = {
    sessionId: grant.sessionId,
    name: grant.name,
    contentType: mediaType.safeParse(put.contentType).data ?? "application/octet-stream",
    // The model's own upload (MCP create_upload): the agent made it.
    origin: "sandbox" as const,
  };
  const limit = Math.min(deps.config.maxFileBytes, gzip ? Infinity : (relayLimit ?? Infinity));
  let file;
  try {
    file =
      size !== undefined
        ? await ingest(deps, { ...input, body: guarded.body, size })
        : await stageUnsized(deps, guarded.body, limit, (staged) =>
            ingest(deps, { ...input, ...staged }),
          );
  } catch (error) {
    if (error instanceof AppError && error.code === "payload_too_large") {
      // Worded by the staging for upload links: say it of this URL.
      throw new AppError(
        "payload_too_large",
        `the file ran past ${limit} bytes, the most this upload URL takes; nothing was kept`,
      );
    }
    throw guarded.fault(gzip) ?? error;
  }
  try {
    await setIdempotencyKeyStatement(deps.db, file.id, key).run();
  } catch (error) {
    if (!isIdempotencyKeyTaken(error)) throw error;
    // Another PUT to the same URL finished first: it keeps the URL, this file goes.
    await deleteFile(deps.db, file.id, deps.now());
    throw usedUp();
  }
  logEvent("mcp_upload", { sessionId: grant.sessionId, fileId: file.id, size: file.size, gzip });
  return toFileRecord(deps, file, origin);
}

function usedUp(): AppError {
  return new AppError("upload_already_completed", "this upload URL has already been used");
}

function overRelayLimit(limit: number): AppError {
  return new AppError(
    "file_too_large",
    `the file is over the ${limit}-byte limit of one request through this relay ` +
      "(RELAY_UPLOAD_MAX_BYTES); send it gzipped, or with airlock send",
  );
}

function encodingOf(header: string | undefined): boolean {
  const value = header?.trim().toLowerCase();
  if (value === undefined || value === "" || value === "identity") return false;
  if (value === "gzip") return true;
  throw new AppError("invalid_request", "Content-Encoding must be gzip, or absent");
}

function lengthOf(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  if (!/^\d{1,16}$/.test(header)) {
    throw new AppError("invalid_request", "Content-Length must be a number of bytes");
  }
  return Number(header);
}
