import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { fsError } from "../cli/errors.js";
import { MEMBER_SPAN, declarableTable, gzipMembersSync } from "./gzip-members.js";
import {
  MIN_GZIP_BYTES,
  MIN_GZIP_SAVING,
  SAMPLE_BYTES,
  gzipPays,
  type StoredBytes,
} from "./prepare.js";
import type { FullDeclaration } from "./send-stored.js";
import type { Sniffed } from "./sniff.js";
import { releaseTemp, tempPath } from "./temp-files.js";

/** A small file held whole in memory: its declaration and the bytes to store. */
export interface InMemory {
  declaration: FullDeclaration;
  stored: Buffer;
}

/**
 * Describes bytes small enough to hold (at most the one-request limit, about 1 MiB): their
 * SHA-256 and, where gzip saves enough, the gzipped form (one synchronous call at this size
 * costs less than starting a stream).
 */
export function describeInMemory(
  original: Buffer,
  name: string,
  { contentType, compressed }: Sniffed,
  level: number,
): InMemory {
  const sha256 = sha256Hex(original);
  const size = original.length;
  // Past the sample's size, the sample decides first: random bytes are not gzipped whole.
  const sample = original.subarray(0, SAMPLE_BYTES);
  const worthTrying =
    size >= MIN_GZIP_BYTES &&
    !compressed &&
    (size <= SAMPLE_BYTES || gzipPays({ size, sample, compressed }, level));
  if (worthTrying) {
    const members = gzipMembersSync(original, level);
    const gzipped = members.length === 1 ? (members[0] as Buffer) : Buffer.concat(members);
    if (gzipped.length <= size * (1 - MIN_GZIP_SAVING)) {
      const declaration = { name, size, sha256, contentType, encoding: "gzip" as const };
      const table = declarableTable(
        MEMBER_SPAN,
        members.map((member) => member.length),
      );
      return {
        declaration: {
          ...declaration,
          storedSize: gzipped.length,
          storedSha256: sha256Hex(gzipped),
          ...(table && { members: table }),
        },
        stored: gzipped,
      };
    }
  }
  return {
    declaration: {
      name,
      size,
      sha256,
      contentType,
      encoding: "identity",
      storedSize: size,
      storedSha256: sha256,
    },
    stored: original,
  };
}

/** The stored bytes in a temp file, for a relay that takes them only as a PUT. */
export async function storedInTemp({ declaration, stored }: InMemory): Promise<StoredBytes> {
  const path = tempPath(tmpdir(), "airlock-", ".bin");
  await writeFile(path, stored, { flag: "wx", mode: 0o600 }).catch((err: unknown) => {
    throw fsError("write temp file", path, err);
  });
  return {
    encoding: declaration.encoding,
    path,
    storedSize: declaration.storedSize,
    storedSha256: declaration.storedSha256,
    members: declaration.members,
    dispose: () => releaseTemp(path),
  };
}

function sha256Hex(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}
