import type { Session } from "../../db/sessions";
import { cancelUploadRequest, findUploadRequest } from "../../db/upload-requests";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { logEvent } from "../../log";
import { abandonClaim } from "./claim";
import { settleRequest, uploadRequestState, type RequestState } from "./upload-requests";

/**
 * `DELETE /v1/requests/:id`: the sandbox takes its upload link back. The link stops working
 * at once; the upload holding it (a browser's, part way) is given up, its stored parts go and
 * its room in the quota is free again; a plain PUT still streaming finds the link gone when it
 * tries to finish, and nothing of it is kept. A link a file already used up is not cancelled
 * (`409`: that file is the session's now; remove it like any other). Cancelling twice answers
 * the same state.
 */
export async function cancelRequest(
  deps: Deps,
  session: Session,
  requestId: string,
): Promise<RequestState> {
  // A new upload may take the link between the read and the update: then read it again.
  for (let attempt = 0; attempt < 5; attempt++) {
    const found = await findUploadRequest(deps.db, requestId);
    if (!found || found.sessionId !== session.id) {
      throw new AppError("not_found", "no such upload request");
    }
    const request = await settleRequest(deps, found);
    if (request.fileId !== null) {
      throw new AppError(
        "upload_already_completed",
        `a file (${request.fileId}) already came through this link; remove the file instead`,
      );
    }
    if (request.cancelledAt === null) {
      if (!(await cancelUploadRequest(deps.db, request.id, request.uploadId, deps.now()))) {
        continue;
      }
      if (request.uploadId !== null) await abandonClaim(deps, request.uploadId);
      logEvent("upload_request_cancelled", {
        requestId: request.id,
        sessionId: session.id,
        uploadId: request.uploadId,
      });
    }
    return uploadRequestState(deps, session, requestId);
  }
  throw new AppError("link_exhausted", "other uploads kept taking this link; cancel it again");
}
