import { z } from "zod";
import { createShareToken } from "../../auth/share-link";
import type { FileRow } from "../../db/files";
import { insertLink } from "../../db/links";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { newId } from "../../ids";

export const createLinkBody = z
  .object({
    ttlSeconds: z.number().int().positive().optional(),
    maxDownloads: z.number().int().positive().max(1_000_000).optional(),
  })
  .strict();

export type CreateLinkBody = z.infer<typeof createLinkBody>;

export interface ShareLinkRecord {
  url: string;
  expiresAt: string;
  maxDownloads: number | null;
}

/**
 * Mints a share link with its own lifetime (default `LINK_TTL_SECONDS`, capped at the
 * file's remaining life; an explicit `ttlSeconds` beyond it is refused) and an optional
 * download cap, counted per link in D1.
 */
export async function createShareLink(
  deps: Deps,
  file: FileRow,
  body: CreateLinkBody,
  origin: string,
): Promise<ShareLinkRecord> {
  const now = deps.now();
  let expiresAt: number;
  if (body.ttlSeconds !== undefined) {
    expiresAt = now + body.ttlSeconds * 1000;
    if (expiresAt > file.expiresAt) {
      const remaining = Math.floor((file.expiresAt - now) / 1000);
      throw new AppError(
        "invalid_request",
        `ttlSeconds: the file expires in ${remaining} s; a link cannot outlive it`,
      );
    }
  } else {
    expiresAt = Math.min(now + deps.config.linkTtlSeconds * 1000, file.expiresAt);
  }
  // Tokens carry whole seconds; the row keeps the same instant.
  const expiresAtSeconds = Math.floor(expiresAt / 1000) * 1000;
  const link = {
    id: newId("lnk"),
    fileId: file.id,
    createdAt: now,
    expiresAt: expiresAtSeconds,
    maxDownloads: body.maxDownloads ?? null,
    bytesServed: 0,
  };
  await insertLink(deps.db, link);
  const token = await createShareToken(deps.config.signingKey, file.id, expiresAt, link.id);
  return {
    url: `${origin}/d/${token}`,
    expiresAt: new Date(expiresAtSeconds).toISOString(),
    maxDownloads: link.maxDownloads,
  };
}
