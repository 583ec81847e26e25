import { stat } from "node:fs/promises";
import { basename } from "node:path";
import { CliError } from "../cli/errors.js";
import { connectEarly } from "../transport/early-connect.js";
import { digestPartSize } from "./part-digests.js";
import {
  gzipPays,
  gzipToTemp,
  identity,
  hashFile,
  readSample,
  changedWhileSending,
  type StoredBytes,
} from "./prepare.js";
import { toSendResult } from "./send-line.js";
import type { SendResult } from "./send-result.js";
import { sendStored } from "./send-stored.js";
import { UploadStates } from "./upload-state.js";
import { SINGLE_UPLOAD_MAX_BYTES } from "./one-request.js";
import { sendSmallFile, type SendOptions } from "./send-small.js";
import { sendFromFirstByte } from "./send-from-first-byte.js";
import { sendGzipFromFirstByte } from "./send-gzip-first-byte.js";
import { multipartThreshold } from "./multipart-threshold.js";

/**
 * A small file goes up in one request. A larger one unchanged since it was last sent is asked
 * for by its recorded SHA-256 first (a dedup hit needs no hash pass). Otherwise: hash, probe
 * for a dedup hit, gzip where it pays, declare, PUT, complete.
 */
export async function sendFile(
  path: string,
  options: SendOptions,
  rename: string | undefined,
): Promise<SendResult> {
  const { relay, level, states } = options;
  const name = rename ?? basename(path);
  const head = readSample(path, SINGLE_UPLOAD_MAX_BYTES);
  if (head.whole) {
    const small = await sendSmallFile(path, name, { ...head, whole: head.whole }, options);
    if (small) return small;
  }
  // More than one request: the relay connection is set up while the file is looked at and its
  // first part hashed, not after.
  connectEarly(relay.url);
  const sent = await options.sent.get();
  const known = sent.sha256Of(path, head);
  if (known !== undefined) {
    // A stale entry can only make this a hit on content the scope sent before (SentCache).
    const { size, contentType } = head;
    const probe = await relay.declareUpload({ name, size, sha256: known, contentType });
    if (probe.status === "deduped") {
      return toSendResult({ file: probe.file, deduped: true, uploadedBytes: 0 });
    }
  }
  // gzip (where it pays) starts alongside the hash pass, on the other core: its output is
  // ready sooner than after a pass of its own. A file sent before is probably a dedup hit,
  // so for one of those gzip waits for the relay's answer rather than compete with the hash.
  const { size, mtimeMs } = head;
  const abandon = new AbortController();
  const pays = gzipPays(head, level);
  const sentBefore = sent.has(path, size, mtimeMs);
  // Large, sent as it is, and probably not held already: its parts go up as they are read,
  // the whole hash follows with complete (a relay that predates this gets the passes below).
  if (!pays && !sentBefore && size > multipartThreshold()) {
    const { contentType } = head;
    const first = await sendFromFirstByte(options, { path, name, size, mtimeMs, contentType });
    if (first) {
      sent.record(path, head, first.sha256);
      return toSendResult(first);
    }
  }
  // Large and worth gzipping: compressed and sent part by part as it is read (the same rule).
  if (pays && !sentBefore && size > multipartThreshold()) {
    const { contentType } = head;
    const file = { path, name, size, mtimeMs, contentType };
    const first = await sendGzipFromFirstByte(options, file, level);
    if (first) {
      sent.record(path, head, first.sha256);
      return toSendResult(first);
    }
  }
  // Bytes that may go up in parts get their part digests in the pass that makes them. A file
  // sent before is probably a dedup hit, whose digests would be wasted work, unless an upload
  // of it was cut short and is about to be resumed (the state file is read only then).
  let partSize = pays ? undefined : digestPartSize(size, false);
  if (partSize !== undefined && sentBefore) {
    const saved = await states.load(UploadStates.key(relay.url, path, size, mtimeMs));
    if (saved === undefined) partSize = undefined;
  }
  const startGzip = () => gzipToTemp(path, level, abandon.signal, digestPartSize(size, true));
  let gzipping = pays && !sentBefore ? startGzip() : null;
  gzipping?.catch(() => {}); // a failure is reported where it is awaited, not as unhandled
  let stored: StoredBytes | undefined;
  try {
    const file = await hashFile(path, partSize);
    const original = { name, size: file.size, sha256: file.sha256, contentType: head.contentType };
    const probe = await relay.declareUpload(original);
    sent.record(path, head, file.sha256);
    if (probe.status === "deduped") {
      return toSendResult({ file: probe.file, deduped: true, uploadedBytes: 0 });
    }
    if (probe.status === "upload" || probe.status === "multipart") {
      throw new CliError(`relay asked to upload ${name} before knowing how it is stored`);
    }

    if (pays) gzipping ??= startGzip();
    stored = gzipping ? await gzipping : identity(path, file);
    // The passes read the file separately; a file written meanwhile would not match its hash.
    // (The relay checks what gzip inflates to in any case; this names the cause.)
    const now = await stat(path).catch(() => undefined);
    if (file.size !== size || now?.size !== size || now.mtimeMs !== mtimeMs) {
      throw changedWhileSending(path);
    }
    const { encoding, storedSize, storedSha256 } = stored;
    const declaration = { ...original, encoding, storedSize, storedSha256 };
    // A dedup hit now means someone stored it meanwhile.
    return toSendResult(
      await sendStored(options, { declaration, stored, source: { path, mtimeMs } }),
    );
  } finally {
    abandon.abort();
    // The temp copy goes whether it was used, finished unused, or was cut short.
    const leftover = stored ?? (await gzipping?.catch(() => undefined));
    await leftover?.dispose();
  }
}
