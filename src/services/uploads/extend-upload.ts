import type { Session } from "../../db/sessions";
import { extendPendingUpload, type Upload } from "../../db/uploads";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";

/** Pushes a pending upload's expiry out with fresh URLs, within the session's quota. */
export async function extendUpload(
  deps: Deps,
  session: Session,
  upload: Upload,
  expiresAt: number,
): Promise<void> {
  if (!(await extendPendingUpload(deps.db, upload, expiresAt, session.quotaBytes, deps.now()))) {
    throw new AppError(
      "quota_exceeded",
      `upload ${upload.id} expired and its ${upload.size} bytes no longer fit in the session's quota`,
    );
  }
}
