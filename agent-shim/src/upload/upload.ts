import { createReadStream } from "node:fs";
import type { RetryPolicy } from "../cli/config.js";
import { DigestStream } from "./digest.js";
import { fsError } from "../cli/errors.js";
import { isRetryableStatus, readText, request, statusError } from "../transport/http.js";
import { changedWhileSending, type StoredBytes } from "./prepare.js";
import { Progress } from "../cli/progress.js";
import type { PutInstructions } from "../transport/relay-client.js";
import { withRetry, type RetryTarget } from "../transport/retry.js";

/**
 * PUTs the stored bytes to the signed URL with exactly the signed headers, streaming from disk.
 * Each attempt re-opens the file, so a retry sends every byte again. The bytes are hashed on the
 * way out so that a file changing under us is reported as that, not as a storage refusal.
 */
export async function putStoredBytes(
  put: PutInstructions,
  stored: StoredBytes,
  label: string,
  policy: RetryPolicy,
): Promise<void> {
  const target = uploadTarget(put.url, `upload of ${label}`);
  const progress = new Progress(label, stored.storedSize);
  try {
    await withRetry(policy, target, async () => {
      progress.reset();
      const digest = new DigestStream({
        bytes: stored.storedSize,
        sha256: stored.storedSha256,
        mismatch: () => changedWhileSending(label),
      });
      const input = createReadStream(stored.path);
      const body = progress.meter();
      input.once("error", (err) => body.destroy(fsError("read", stored.path, err)));
      digest.once("error", (err) => body.destroy(err));
      body.once("close", () => input.destroy());
      input.pipe(digest).pipe(body);

      const res = await request({ method: put.method, url: put.url, headers: put.headers, body });
      const text = await readText(res);
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) return;
      const refused = `${target.service} refused upload of ${label}`;
      throw statusError(res, text, refused, isRetryableStorageAnswer);
    });
  } finally {
    progress.finish();
  }
}

/**
 * Where an upload goes, for messages: the URL without its signed query string. On the R2
 * backend that is the relay's own upload route (`/v1/blob-uploads/<id>`), so a failure there
 * names the relay and that URL, not a storage service.
 */
export function uploadTarget(putUrl: string, action: string): RetryTarget {
  const { origin, pathname } = new URL(putUrl);
  const service = pathname.includes("/v1/blob-uploads/") ? "relay" : "storage";
  return { service, url: `${origin}${pathname}`, action };
}

/**
 * Storage answers worth another try: 429 and 5xx, and S3's `400 RequestTimeout` for a body
 * that went idle too long (the AWS SDKs treat it as transient too).
 */
export function isRetryableStorageAnswer(status: number, code: string | undefined): boolean {
  return isRetryableStatus(status) || code === "RequestTimeout";
}
