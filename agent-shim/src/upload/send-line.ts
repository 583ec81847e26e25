import type { FileRecord } from "../transport/relay-client.js";
import type { SendResult } from "./send-result.js";
import type { Sent } from "./send-stored.js";

/** The `send --json` line of a sent file, its deliveries still to come. */
export function toSendResult({ file, deduped, uploadedBytes }: Sent): SendResult {
  const { fileId, name, size, sha256, url } = file;
  const status = file.status === "pending" ? "pending" : "verified";
  return {
    fileId,
    name,
    size,
    sha256,
    url,
    expiresAt: linkExpiry(file),
    fileExpiresAt: file.expiresAt,
    status,
    deduped,
    uploadedBytes,
    deliveries: [],
  };
}

/** When the file record's own link stops working (older relays did not say: the file's expiry). */
function linkExpiry(file: FileRecord): string {
  return typeof file.urlExpiresAt === "string" ? file.urlExpiresAt : file.expiresAt;
}
