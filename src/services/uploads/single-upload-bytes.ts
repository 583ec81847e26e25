import { createHash } from "node:crypto";
import { digestMembers } from "../../content/gzip-member-digest";
import type { Upload } from "../../db/uploads";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { ContentRejectedError } from "../../storage/blob-store";

/**
 * Reads the body (at most `SINGLE_UPLOAD_MAX_BYTES`, natively: no script runs per chunk),
 * hashes it and, for gzip, inflates it (cut off at the declared size; with a member table,
 * member by member, each cut off at its span) and hashes the original bytes; only bytes that are exactly the declared ones go to the upload's key, where the
 * store verifies the stored SHA-256 again. Throws `length_mismatch` for a body that is not
 * `storedSize` bytes long and `content_mismatch` for any other difference.
 */
export async function storeChecked(deps: Deps, upload: Upload, body: ReadableStream<Uint8Array>) {
  const bytes = await readExactly(body, upload.storedSize);
  if (sha256Hex(bytes) !== upload.storedSha256) throw contentMismatch();
  if (upload.encoding === "gzip") {
    // With a member table, each member inflates on its own to its span and ends at its size;
    // without, the bytes are one member inflating to the declared size.
    const table = upload.members ?? { span: upload.size, storedSizes: [bytes.byteLength] };
    const stored = new Blob([bytes]).stream();
    const original = await digestMembers(stored, table, upload.size).catch(() => null);
    if (original?.sha256Hex !== upload.sha256) throw contentMismatch();
  }
  const expected = { size: upload.storedSize, sha256Hex: upload.storedSha256 };
  await deps.store.put(upload.storedKey, bytes, expected).catch((error: unknown) => {
    if (!(error instanceof ContentRejectedError)) throw error;
    throw error.reason === "length" ? lengthMismatch(upload) : contentMismatch();
  });
}

/** The whole body, which must be exactly `size` bytes long. */
async function readExactly(body: ReadableStream<Uint8Array>, size: number): Promise<Uint8Array> {
  const exact = new FixedLengthStream(size);
  const piped = body.pipeTo(exact.writable);
  const read = new Response(exact.readable).arrayBuffer();
  const [pipe, bytes] = await Promise.allSettled([piped, read]);
  if (pipe.status === "rejected" || bytes.status === "rejected")
    throw lengthMismatch({ storedSize: size });
  return new Uint8Array(bytes.value);
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function lengthMismatch(upload: Pick<Upload, "storedSize">): AppError {
  return new AppError("length_mismatch", `the body was not ${upload.storedSize} bytes long`);
}

function contentMismatch(): AppError {
  return new AppError(
    "content_mismatch",
    "the uploaded bytes are not the declared content (size or SHA-256); nothing was kept",
  );
}
