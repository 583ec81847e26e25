import type { ContentfulStatusCode } from "hono/utils/http-status";

/** Every error code the relay answers with, its HTTP status and default message. */
export const ERRORS = {
  invalid_json: { status: 400, message: "request body is not valid JSON" },
  invalid_request: { status: 400, message: "request is invalid" },
  unsupported_media_type: { status: 415, message: "request body must be application/json" },
  unauthorized: { status: 401, message: "missing or malformed Authorization header" },
  invalid_token: { status: 401, message: "token is invalid or expired" },
  session_revoked: { status: 401, message: "session has been revoked" },
  forbidden: { status: 403, message: "this token may not do that" },
  not_found: { status: 404, message: "no such route" },
  session_not_found: { status: 404, message: "no such session" },
  file_too_large: { status: 413, message: "file is larger than the relay accepts" },
  quota_exceeded: { status: 413, message: "file does not fit in the session's byte quota" },
  upload_not_found: { status: 404, message: "no such upload" },
  upload_expired: { status: 410, message: "upload URL has expired" },
  upload_not_uploaded: { status: 409, message: "nothing was uploaded for this upload" },
  upload_already_completed: { status: 409, message: "upload was already completed" },
  upload_rejected: { status: 409, message: "upload was rejected" },
  upload_incomplete: { status: 409, message: "some parts of this upload are not stored yet" },
  length_mismatch: { status: 400, message: "body length differs from the declared size" },
  checksum_mismatch: { status: 400, message: "body SHA-256 differs from the declared checksum" },
  content_mismatch: { status: 422, message: "uploaded bytes are not what was declared" },
  file_not_found: { status: 404, message: "no such file" },
  file_expired: { status: 410, message: "file has expired" },
  file_deleted: { status: 410, message: "file has been deleted" },
  invalid_link: { status: 403, message: "share link is invalid" },
  link_expired: { status: 410, message: "share link has expired" },
  link_exhausted: { status: 410, message: "share link has reached its download limit" },
  range_not_satisfiable: { status: 416, message: "requested range is not satisfiable" },
  webhook_unauthorized: { status: 401, message: "webhook signature is missing or invalid" },
  destination_not_allowed: {
    status: 403,
    message: "this session may not deliver to that destination",
  },
  platform_not_configured: {
    status: 400,
    message: "that chat platform is not configured on this relay",
  },
  delivery_failed: { status: 502, message: "the chat platform refused the delivery" },
  platform_unreachable: { status: 504, message: "the chat platform could not be reached" },
  delivery_in_progress: {
    status: 409,
    message: "a delivery with this Idempotency-Key is still in progress",
  },
  idempotency_key_reused: {
    status: 409,
    message: "this Idempotency-Key was used for another request, or what it made is gone",
  },
  inbox_item_not_found: { status: 404, message: "no such inbox item" },
  length_required: { status: 411, message: "Content-Length is required" },
  payload_too_large: { status: 413, message: "request body is larger than the relay accepts" },
  method_not_allowed: { status: 405, message: "method not allowed" },
  storage_unavailable: { status: 503, message: "object storage is unavailable" },
  file_assembling: {
    status: 503,
    message: "the store is still joining this file's parts; try again in a few seconds",
  },
  misconfigured: { status: 500, message: "relay is misconfigured" },
  internal: { status: 500, message: "internal error" },
} as const satisfies Record<string, { status: ContentfulStatusCode; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** An error the relay answers with as `{ error: { code, message } }`. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: ContentfulStatusCode;

  constructor(code: ErrorCode, message?: string) {
    super(message ?? ERRORS[code].message);
    this.name = "AppError";
    this.code = code;
    this.status = ERRORS[code].status;
  }
}

/**
 * The code for a 4xx that a library raised (Hono's `HTTPException`: a body limit, a bad
 * header) rather than the relay: the code of that status that says the least beyond it.
 */
export function codeForStatus(status: number): ErrorCode {
  const byStatus: Partial<Record<number, ErrorCode>> = {
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    411: "length_required",
    413: "payload_too_large",
    415: "unsupported_media_type",
    416: "range_not_satisfiable",
  };
  return byStatus[status] ?? "invalid_request";
}
