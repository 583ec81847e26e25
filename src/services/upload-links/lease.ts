import { promoteLinkUpload, renewLinkUpload } from "../../db/link-uploads";
import type { Session } from "../../db/sessions";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { MultipartUploadGoneError } from "../../storage/blob-store";
import {
  heldParts,
  missingParts,
  multipartTarget,
  uploadGone,
  type MultipartUpload,
} from "../uploads/multipart-upload";
import { rejectUpload } from "../uploads/reject-upload";

/** Until when a link upload given (or renewing) its lease at `now` holds its room. */
export function linkLeaseUntil(deps: Deps, now: number): number {
  return now + deps.config.linkUploadLeaseSeconds * 1000;
}

/**
 * Renews a link upload's lease because a part is arriving. A lapsed one is renewed only if its
 * bytes fit beside everything the session holds or was promised; otherwise `413`.
 */
export async function renewLinkLease(
  deps: Deps,
  session: Session,
  upload: MultipartUpload,
): Promise<void> {
  const now = deps.now();
  const leaseUntil = linkLeaseUntil(deps, now);
  if (!(await renewLinkUpload(deps.db, upload, leaseUntil, session.quotaBytes, now))) {
    throw new AppError(
      "quota_exceeded",
      "this upload stopped sending and its room in the session's quota went to other files; " +
        "pick the file again",
    );
  }
}

/**
 * Moves a link upload whose bytes have all arrived into the session's own count, so that
 * `complete` registers it like any upload of the sandbox's. When the sandbox filled its quota
 * first the upload is given up (`413 quota_exceeded`, nothing kept): a stranger's promise never
 * outranks the sandbox's own sends.
 */
export async function countAsSessions(
  deps: Deps,
  session: Session,
  upload: MultipartUpload,
): Promise<void> {
  const now = deps.now();
  const leaseUntil = linkLeaseUntil(deps, now);
  if (await promoteLinkUpload(deps.db, upload, leaseUntil, session.quotaBytes, now)) return;
  await rejectUpload(deps, upload);
  await deps.store.abortMultipartUpload(multipartTarget(upload)).catch(() => {});
  throw new AppError(
    "quota_exceeded",
    `the session that asked for this file has no room left for its ${upload.size} bytes; ` +
      "nothing was kept",
  );
}

/** The part numbers of a link upload the store does not hold yet (none once assembled). */
export async function missingLinkParts(deps: Deps, upload: MultipartUpload): Promise<number[]> {
  try {
    return missingParts(upload, await heldParts(deps, upload));
  } catch (error) {
    if (!(error instanceof MultipartUploadGoneError)) throw error;
    // Assembled by a completion that did not get to register the file: nothing is missing.
    if (await deps.store.head(upload.storedKey)) return [];
    await rejectUpload(deps, upload);
    throw uploadGone();
  }
}
