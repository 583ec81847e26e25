import { z } from "zod";
import {
  memberTableProblem,
  memberTableSchema,
  type MemberTable,
} from "../../content/gzip-members";
import type { StoredPart } from "../../db/upload-parts";
import type { Upload } from "../../db/uploads";
import { AppError } from "../../errors";
import { maxStoredSize, partCount, partLength } from "../../part-plan";
import { byteCount, sha256Hex } from "../validation";
import { checkPartNumber } from "./part-number";

/**
 * gzip sent from its first byte (docs/api.md, "gzip with the hash at complete"): the declare
 * says `"encoding": "gzip"` with no stored fields, since the compressed bytes do not exist
 * yet. Until `complete` brings the stored size, stored SHA-256 and member table, the upload
 * holds the largest size gzip can make of the file (`maxStoredSize`), so its parts are
 * planned within that bound: every part but the last is exactly `partSize`, and each part's
 * request names its length beside its digest.
 */

/**
 * `POST /v1/uploads/:id/complete`'s optional body: the whole file's SHA-256 and, for gzip
 * declared without its stored form, that form.
 */
export const completeBody = z
  .object({
    sha256: sha256Hex.optional(),
    storedSize: byteCount.optional(),
    storedSha256: sha256Hex.optional(),
    members: memberTableSchema.optional(),
  })
  .strict();

export type CompleteBody = z.infer<typeof completeBody>;

/** What a deferred upload's stored bytes are, as its `complete` gives them. */
export interface StoredForm {
  storedSize: number;
  storedSha256: string;
  members: MemberTable | null;
}

/** A gzip upload whose stored size is not known yet: `storedSize` is the bound. */
export function storedSizeUnknown(upload: Upload): boolean {
  return upload.encoding === "gzip" && upload.sha256 === "";
}

/**
 * The length part `partNumber` of a deferred upload must have, which its URL binds: fixed by
 * the size for identity (a `size` given must be it); for gzip whose stored size is not known
 * yet, the `size` its sender gives, at most `partSize` and within the bound.
 */
export function deferredPartLength(upload: Upload, partNumber: number, size?: number): number {
  const { storedSize } = upload;
  const partSize = upload.multipart?.partSize ?? storedSize;
  const count = partCount(storedSize, partSize);
  checkPartNumber(partNumber, count);
  const planned = partLength(storedSize, partSize, partNumber);
  if (!storedSizeUnknown(upload)) {
    if (size !== undefined && size !== planned) {
      throw new AppError(
        "invalid_request",
        `part ${partNumber} of this upload is ${planned} bytes`,
      );
    }
    return planned;
  }
  if (size === undefined) {
    throw new AppError(
      "invalid_request",
      "the parts of a gzip upload declared without its stored size carry their size ({ partNumber, sha256, size })",
    );
  }
  if (size < 1 || size > planned) {
    throw new AppError(
      "invalid_request",
      `part ${partNumber} of this upload is 1 to ${planned} bytes (every part but the last is ${partSize})`,
    );
  }
  return size;
}

/** Whether a part the store holds has a length this upload's plan allows at its number. */
export function heldPartFits(upload: Upload, part: StoredPart): boolean {
  const partSize = upload.multipart?.partSize ?? upload.storedSize;
  const planned = partLength(upload.storedSize, partSize, part.partNumber);
  return storedSizeUnknown(upload) ? part.size >= 1 && part.size <= planned : part.size === planned;
}

/**
 * The stored form `complete` gives a deferred upload, checked against its declare: identity
 * stores the original bytes (nothing else may be claimed); gzip needs `storedSize` and
 * `storedSha256`, within what gzip can make of the file, and a member table that fits them
 * (`400 invalid_request` naming the field otherwise, and nothing is recorded). Whether the
 * bytes are what it says is the read-back's to find, as for a declared table.
 */
export function storedFormAtComplete(
  upload: Upload,
  body: CompleteBody,
  sha256: string,
): StoredForm {
  const { storedSize, storedSha256, members } = body;
  if (upload.encoding === "identity") {
    if (
      (storedSize !== undefined && storedSize !== upload.size) ||
      (storedSha256 !== undefined && storedSha256 !== sha256) ||
      members !== undefined
    ) {
      throw new AppError(
        "invalid_request",
        "this upload stores the original bytes: storedSize, storedSha256 and members are not taken",
      );
    }
    return { storedSize: upload.size, storedSha256: sha256, members: null };
  }
  if (storedSize === undefined || storedSha256 === undefined) {
    throw new AppError(
      "invalid_request",
      "this gzip upload was declared without its stored form: complete must carry sha256, storedSize and storedSha256 (and members)",
    );
  }
  if (storedSize > maxStoredSize(upload.size)) {
    throw new AppError("invalid_request", "storedSize is larger than gzip can make this file");
  }
  const problem = members ? memberTableProblem(members, upload.size, storedSize) : null;
  if (problem) throw new AppError("invalid_request", `members.storedSizes: ${problem}`);
  return { storedSize, storedSha256, members: members ?? null };
}
