import { forgetMemberTables } from "../../db/gzip-members";
import { isStoredKeyInUse } from "../../db/blobs";
import { markUploadRejected, type Upload } from "../../db/uploads";
import type { Deps } from "../../deps";

/** Marks an upload rejected and removes its object unless verified content shares it. */
export async function rejectUpload(deps: Deps, upload: Upload): Promise<void> {
  await markUploadRejected(deps.db, upload.id);
  await deleteObjectIfUnused(deps, upload);
}

/** Removes an upload's object when no verified blob and no other pending upload uses it. */
export async function deleteObjectIfUnused(deps: Deps, upload: Upload): Promise<void> {
  if (!(await isStoredKeyInUse(deps.db, upload.storedKey, upload.id))) {
    await deps.store.delete(upload.storedKey);
    await forgetMemberTables(deps.db, [upload.storedKey]);
  }
}
