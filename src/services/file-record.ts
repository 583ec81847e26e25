import { createShareToken } from "../auth/share-link";
import type { FileRow } from "../db/files";
import type { Deps } from "../deps";
import type { FileRecord } from "../wire-types";

export type { FileRecord } from "../wire-types";

/** The share link lives `LINK_TTL_SECONDS`, never longer than the file. */
export async function toFileRecord(deps: Deps, file: FileRow, origin: string): Promise<FileRecord> {
  const linkExpiresAt = Math.min(deps.now() + deps.config.linkTtlSeconds * 1000, file.expiresAt);
  const token = await createShareToken(deps.config.signingKey, file.id, linkExpiresAt);
  return {
    fileId: file.id,
    sessionId: file.sessionId,
    name: file.name,
    size: file.size,
    status: file.verified ? "verified" : "pending",
    sha256: file.sha256,
    contentType: file.contentType,
    createdAt: new Date(file.createdAt).toISOString(),
    expiresAt: new Date(file.expiresAt).toISOString(),
    deduped: file.deduped,
    origin: file.origin,
    url: `${origin}/d/${token}`,
    urlExpiresAt: new Date(Math.floor(linkExpiresAt / 1000) * 1000).toISOString(),
  };
}
