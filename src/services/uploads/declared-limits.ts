import type { Session } from "../../db/sessions";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { maxStoredSize } from "../../part-plan";

/**
 * The limits a declaration of `size` bytes meets before any lookup: `MAX_FILE_BYTES` and the
 * whole session quota.
 */
export function checkDeclaredSize(deps: Deps, session: Session, size: number): void {
  if (size > deps.config.maxFileBytes) {
    throw new AppError(
      "file_too_large",
      `file is ${size} bytes; this relay accepts at most ${deps.config.maxFileBytes}`,
    );
  }
  if (size > session.quotaBytes) {
    throw new AppError(
      "quota_exceeded",
      `file is ${size} bytes; the session quota is ${session.quotaBytes}`,
    );
  }
}

/**
 * The rules new stored bytes break, or null: gzip bytes larger than gzip can make the file,
 * and a request (`requestBytes`: the whole stored size, or one part) over what one request
 * through the relay may carry. A dedup hit is answered before them.
 */
export function storedBytesRefusal(
  deps: Deps,
  declared: { size: number; encoding: "identity" | "gzip"; storedSize: number },
  requestBytes = declared.storedSize,
): AppError | null {
  if (declared.encoding === "gzip" && declared.storedSize > maxStoredSize(declared.size)) {
    return new AppError("invalid_request", "storedSize is larger than gzip can make this file");
  }
  const relayLimit = deps.store.receiveUpload ? deps.config.relayUploadMaxBytes : undefined;
  if (relayLimit !== undefined && requestBytes > relayLimit) {
    return new AppError(
      "file_too_large",
      `${requestBytes} bytes in one request is over the ${relayLimit}-byte limit of one ` +
        "request through this relay (RELAY_UPLOAD_MAX_BYTES); send it in parts",
    );
  }
  return null;
}

/** `declareUpload`'s refusal when the bytes do not fit what the session holds already. */
export function quotaExceeded(size: number): AppError {
  return new AppError("quota_exceeded", `${size} more bytes would exceed the session's byte quota`);
}

/** `declareUpload`'s refusal when the scope holds this SHA-256 with another size. */
export function sizeMismatch(): AppError {
  return new AppError("invalid_request", "size does not match the content with this sha256");
}
