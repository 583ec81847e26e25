import { createHash } from "node:crypto";
import { open, type FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { fsError } from "../cli/errors.js";
import { tempPath } from "./temp-files.js";

/** A part of the stored bytes as it fills: a temp file of its own and the hash of what it holds. */
export interface PartFile {
  path: string;
  handle: FileHandle;
  hash: ReturnType<typeof createHash>;
  length: number;
  write(bytes: Buffer): Promise<void>;
}

export async function partFile(): Promise<PartFile> {
  const path = tempPath(tmpdir(), "airlock-part-", ".gz");
  const handle = await open(path, "wx", 0o600).catch((err: unknown) => {
    throw fsError("write temp file", path, err);
  });
  const part: PartFile = {
    path,
    handle,
    hash: createHash("sha256"),
    length: 0,
    async write(bytes: Buffer) {
      await handle.write(bytes).catch((err: unknown) => {
        throw fsError("write temp file", path, err);
      });
      part.hash.update(bytes);
      part.length += bytes.length;
    },
  };
  return part;
}
