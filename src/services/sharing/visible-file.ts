import type { Caller } from "../../app-env";
import { findFile, type FileRow } from "../../db/files";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";

/** A live file the caller may see; another session's file is reported as missing. */
export async function visibleFile(deps: Deps, caller: Caller, id: string): Promise<FileRow> {
  const file = await findFile(deps.db, id);
  if (!file || (caller.kind === "session" && file.sessionId !== caller.session.id))
    throw new AppError("file_not_found");
  if (file.expiresAt <= deps.now()) throw new AppError("file_expired");
  return file;
}
