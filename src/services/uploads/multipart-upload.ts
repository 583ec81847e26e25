import type { StoredPart } from "../../db/upload-parts";
import type { Session } from "../../db/sessions";
import type { Upload } from "../../db/uploads";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { partCount, partLength } from "../../part-plan";
import { MultipartUploadGoneError, type MultipartTarget } from "../../storage/blob-store";
import type { MultipartAnswer, PartUpload } from "../../wire-types";
import { extendUpload } from "./extend-upload";
import { rejectUpload } from "./reject-upload";
import { heldPartFits } from "./deferred-gzip";

const HOUR = 3_600_000;

/**
 * How long after it was declared a multipart upload can still be resumed: short of the
 * bucket's rule that aborts incomplete multipart uploads a day after they start.
 */
export const RESUME_WINDOW_MS = 23 * HOUR;

/** An upload that goes up in parts. */
export type MultipartUpload = Upload & { multipart: NonNullable<Upload["multipart"]> };

export function isMultipart(upload: Upload): upload is MultipartUpload {
  return upload.multipart !== null;
}

export function multipartTarget(upload: MultipartUpload): MultipartTarget {
  return {
    uploadId: upload.id,
    storeUploadId: upload.multipart.storeUploadId,
    key: upload.storedKey,
  };
}

/** The numbers of the parts not among `held`, ascending. */
export function missingParts(upload: MultipartUpload, held: StoredPart[]): number[] {
  const stored = new Set(held.map((part) => part.partNumber));
  const all = Array.from({ length: plannedParts(upload) }, (_, index) => index + 1);
  return all.filter((partNumber) => !stored.has(partNumber));
}

/**
 * How many parts the upload is cut into. An upload declared without its hashes
 * (`partSha256` empty until complete) has them from its stored size.
 */
export function plannedParts(upload: MultipartUpload): number {
  return partCount(upload.storedSize, upload.multipart.partSize);
}

/**
 * Fresh signed PUTs for the `missing` parts. For an upload declared without its part
 * digests there is nothing to sign yet: the answer lists the `missing` part numbers, whose
 * URLs are asked for with each part's SHA-256 (`POST /v1/uploads/:id/parts`).
 */
export async function multipartAnswer(
  deps: Deps,
  upload: MultipartUpload,
  missing: number[],
  origin: string,
): Promise<MultipartAnswer> {
  const { partSize, partSha256 } = upload.multipart;
  const target = multipartTarget(upload);
  const deferred = partSha256.length === 0;
  const parts: PartUpload[] = await Promise.all(
    (deferred ? [] : missing).map(async (partNumber) => ({
      partNumber,
      put: await deps.store.createPartUploadUrl({
        target,
        partNumber,
        size: partLength(upload.storedSize, partSize, partNumber),
        sha256Hex: partSha256[partNumber - 1]!,
        expiresAt: upload.expiresAt,
        relayOrigin: origin,
      }),
    })),
  );
  return {
    status: "multipart",
    uploadId: upload.id,
    expiresAt: new Date(upload.expiresAt).toISOString(),
    partSize,
    partCount: plannedParts(upload),
    parts,
    ...(deferred ? { missing } : {}),
  };
}

/**
 * The parts the store holds that are the declared ones: right number, right length and,
 * where the store reports it, right SHA-256. Anything else counts as missing and is sent
 * again (a part re-sent under the same number replaces the old one).
 */
export async function heldParts(deps: Deps, upload: MultipartUpload): Promise<StoredPart[]> {
  const { partSha256 } = upload.multipart;
  const parts = await deps.store.listParts(multipartTarget(upload));
  // Declared without digests: each part is what the store verified against the digest its
  // URL was signed with, and the whole is read back before anything counts as content.
  const declared = (n: number) => (partSha256.length === 0 ? undefined : partSha256[n - 1]);
  return parts
    .filter(
      (part) =>
        part.partNumber >= 1 &&
        part.partNumber <= plannedParts(upload) &&
        heldPartFits(upload, part) &&
        (part.sha256Hex === undefined ||
          declared(part.partNumber) === undefined ||
          part.sha256Hex === declared(part.partNumber)),
    )
    .map((part) => ({ ...part, sha256Hex: declared(part.partNumber) ?? part.sha256Hex }));
}

/**
 * Where a pending multipart upload stands, with fresh URLs for its missing parts. The
 * upload's expiry (and the quota it holds) moves out with the URLs, up to the resume window.
 */
export async function resumeMultipart(
  deps: Deps,
  session: Session,
  upload: MultipartUpload,
  origin: string,
): Promise<MultipartAnswer> {
  const now = deps.now();
  const resumableUntil = upload.createdAt + RESUME_WINDOW_MS;
  if (now >= resumableUntil) {
    throw new AppError("upload_expired", "this upload is too old to resume; send the file again");
  }
  let missing: number[];
  try {
    missing = missingParts(upload, await heldParts(deps, upload));
  } catch (error) {
    if (!(error instanceof MultipartUploadGoneError)) throw error;
    // Assembled by a completion that did not get to register the file: nothing is missing.
    await assembledOrGivenUp(deps, upload);
    missing = [];
  }
  const expiresAt = Math.min(now + deps.config.uploadUrlTtlSeconds * 1000, resumableUntil);
  await extendUpload(deps, session, upload, expiresAt);
  return multipartAnswer(
    deps,
    { ...upload, expiresAt: Math.max(expiresAt, upload.expiresAt) },
    missing,
    origin,
  );
}

/**
 * Assembles the parts into the upload's object, once every declared part is stored. An
 * object already there was assembled by an earlier attempt whose answer was lost.
 */
export async function assembleParts(deps: Deps, upload: MultipartUpload): Promise<void> {
  if (await deps.store.head(upload.storedKey)) return;
  await whileStoreHolds(deps, upload, async () => {
    const held = await allPartsHeld(deps, upload);
    await deps.store.completeMultipartUpload(multipartTarget(upload), held);
  });
}

/**
 * Checks that every declared part is stored (each verified by the store on its way in),
 * without assembling them; an upload already assembled passes.
 */
export async function checkPartsStored(deps: Deps, upload: MultipartUpload): Promise<void> {
  await whileStoreHolds(deps, upload, () => allPartsHeld(deps, upload));
}

/** The stored parts, all of them; `upload_incomplete` names the first missing ones. */
async function allPartsHeld(deps: Deps, upload: MultipartUpload): Promise<StoredPart[]> {
  const held = await heldParts(deps, upload);
  const missing = missingParts(upload, held);
  if (missing.length > 0) {
    const first = missing.slice(0, 5).join(", ");
    throw new AppError(
      "upload_incomplete",
      `${missing.length} of ${plannedParts(upload)} parts are not stored yet (part ${first}${missing.length > 5 ? ", …" : ""})`,
    );
  }
  return held;
}

/** Runs `step` on the store's multipart upload; one the store no longer has must be assembled. */
async function whileStoreHolds(
  deps: Deps,
  upload: MultipartUpload,
  step: () => Promise<unknown>,
): Promise<void> {
  try {
    await step();
  } catch (error) {
    if (!(error instanceof MultipartUploadGoneError)) throw error;
    // A concurrent completion may have assembled it a moment ago.
    await assembledOrGivenUp(deps, upload);
  }
}

/**
 * For an upload the store no longer has: returns if a completion already assembled its
 * object; otherwise gives the upload up and throws `uploadGone()`.
 */
async function assembledOrGivenUp(deps: Deps, upload: MultipartUpload): Promise<void> {
  if (await deps.store.head(upload.storedKey)) return;
  await rejectUpload(deps, upload);
  throw uploadGone();
}

/** The error for a multipart upload the store no longer has (aborted or expired). */
export function uploadGone(): AppError {
  return new AppError(
    "upload_expired",
    "the store no longer holds this upload; send the file again",
  );
}
