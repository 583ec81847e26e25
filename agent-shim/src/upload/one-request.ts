import { createReadStream } from "node:fs";
import type { Readable } from "node:stream";
import { fsError } from "../cli/errors.js";
import type { RelayClient } from "../transport/relay-client.js";
import { DigestStream } from "./digest.js";
import { changedWhileSending, type StoredBytes } from "./prepare.js";
import type { FullDeclaration, Sent } from "./send-stored.js";

export { SINGLE_UPLOAD_MAX_BYTES } from "../../../src/services/uploads/single-upload-limit.js";

/**
 * Sends a small file in one request (`POST /v1/single-uploads`): the relay declares, stores,
 * verifies and registers it at once, or answers a dedup hit within the session's owner scope
 * without reading the body. `bytes` are the stored bytes, in memory or on disk (streamed and
 * checked against their digest on the way out). Undefined when the relay has no such route.
 */
export async function sendInOneRequest(
  relay: RelayClient,
  declaration: FullDeclaration,
  bytes: Buffer | StoredBytes,
): Promise<Sent | undefined> {
  const body = () => (Buffer.isBuffer(bytes) ? bytes : checkedStream(bytes, declaration.name));
  const file = await relay.singleUpload(declaration, body);
  if (!file) return undefined;
  return { file, deduped: file.deduped, uploadedBytes: file.deduped ? 0 : declaration.storedSize };
}

/** The stored bytes from disk, failing if they are not what was hashed (the file changed). */
function checkedStream(stored: StoredBytes, label: string): Readable {
  const digest = new DigestStream({
    bytes: stored.storedSize,
    sha256: stored.storedSha256,
    mismatch: () => changedWhileSending(label),
  });
  const input = createReadStream(stored.path);
  input.once("error", (err) => digest.destroy(fsError("read", stored.path, err)));
  digest.once("close", () => input.destroy());
  return input.pipe(digest);
}
