import { linkRoom } from "../../db/link-uploads";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import type { OpenLink } from "./upload-requests";

/**
 * What a new upload through a link may take now: the smaller of the link's `maxBytes`,
 * `MAX_FILE_BYTES` and what the session's quota has left beside its files and every pending
 * upload (the sandbox's own and other links'). `refusal` is the error for more than that when
 * the quota is what limits it (`413 quota_exceeded`); undefined when the link's own limits do
 * (their refusals are `checkSize`'s and `stageUnsized`'s).
 */
export interface LinkLimit {
  bytes: number;
  refusal?: AppError;
}

export async function linkLimit(deps: Deps, link: OpenLink): Promise<LinkLimit> {
  const { request, session } = link;
  const room = await linkRoom(deps.db, session.id, session.quotaBytes, deps.now());
  const ownLimit = Math.min(request.maxBytes, deps.config.maxFileBytes);
  if (room >= ownLimit) return { bytes: ownLimit };
  return { bytes: room, refusal: quotaLeft(room) };
}

/** Refuses `size` bytes over what the session's quota has left, before a byte is read. */
export function checkLinkLimit(limit: LinkLimit, size: number): void {
  if (size > limit.bytes) throw limit.refusal ?? quotaLeft(limit.bytes);
}

function quotaLeft(room: number): AppError {
  return new AppError(
    "quota_exceeded",
    `the session that asked for this file has ${room} bytes of its quota left; nothing was kept`,
  );
}
