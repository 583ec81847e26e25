import { findUpload } from "../../db/uploads";
import type { Deps } from "../../deps";
import { logEvent } from "../../log";
import { isMultipart, multipartTarget } from "../uploads/multipart-upload";
import { rejectUpload } from "../uploads/reject-upload";

/**
 * Gives up an upload that no longer holds its link (a newer upload took the link over, or it
 * lost a race for it): it stops holding quota and its stored parts go. A plain PUT's claim
 * (`put_…`) has no upload row: that request notices itself when it tries to finish.
 */
export async function abandonClaim(deps: Deps, uploadId: string): Promise<void> {
  const upload = await findUpload(deps.db, uploadId);
  if (!upload || upload.status !== "pending") return;
  await rejectUpload(deps, upload);
  if (isMultipart(upload)) {
    await deps.store.abortMultipartUpload(multipartTarget(upload)).catch((error: unknown) => {
      // The bucket's rule aborts incomplete multipart uploads after a day anyway.
      logEvent("upload_link_abort_failed", { uploadId, error: String(error) }, "warn");
    });
  }
}
