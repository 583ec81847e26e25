import { open, stat } from "node:fs/promises";
import { basename } from "node:path";
import { parseCommandArgs } from "../args.js";
import { gzipLevel, relayConfig, retryPolicy, type RetryPolicy } from "../config.js";
import { CliError, UsageError, fsError } from "../errors.js";
import { HELP, USAGE } from "../help.js";
import { print } from "../output.js";
import { gzipPays, gzipToTemp, identity, inspect } from "../prepare.js";
import { RelayClient, type FileRecord } from "../relay-client.js";
import { putStoredBytes } from "../upload.js";

const OPTIONS = {
  to: { type: "string", multiple: true },
  caption: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** One line of `send --json`. */
export interface SendResult {
  fileId: string;
  name: string;
  size: number;
  sha256: string;
  url: string;
  expiresAt: string;
  deduped: boolean;
  /** Bytes PUT to storage: 0 on a dedup hit, the stored (possibly gzipped) size otherwise. */
  uploadedBytes: number;
  deliveries: unknown[];
}

/** `airlock send <path>...`: checks every path first, then sends each and prints its share URL. */
export async function send(args: string[]): Promise<void> {
  const { values, positionals: paths } = parseCommandArgs(args, OPTIONS, USAGE.send);
  if (values.help) return print(HELP);
  if (paths.length === 0) {
    throw new UsageError(`send needs at least one path; usage: ${USAGE.send}`);
  }
  // Refused before anything is uploaded: a file sent without its delivery helps no one.
  if (values.to) throw new UsageError("--to delivery is not supported yet");
  if (values.caption !== undefined) {
    throw new UsageError("--caption needs --to, which is not supported yet");
  }

  const policy = retryPolicy();
  const relay = new RelayClient(relayConfig(), policy);
  const level = gzipLevel();
  for (const path of paths) await checkSendable(path);
  for (const path of paths) {
    const result = await sendFile(relay, path, level, policy);
    print(values.json ? JSON.stringify(result) : result.url);
  }
}

/** A regular file this process can read; anything else fails before a byte is sent. */
async function checkSendable(path: string): Promise<void> {
  const info = await stat(path).catch((err: unknown) => {
    throw fsError("read", path, err);
  });
  if (info.isDirectory()) {
    throw new UsageError(`${path} is a directory; sending directories is not supported yet`);
  }
  if (!info.isFile()) throw new UsageError(`${path} is not a regular file`);
  const handle = await open(path, "r").catch((err: unknown) => {
    throw fsError("read", path, err);
  });
  await handle.close();
}

/** Hash, probe for a dedup hit, gzip where it pays, declare, PUT, complete. */
async function sendFile(
  relay: RelayClient,
  path: string,
  level: number,
  policy: RetryPolicy,
): Promise<SendResult> {
  const name = basename(path);
  const file = await inspect(path);
  const original = { name, size: file.size, sha256: file.sha256, contentType: file.contentType };

  const probe = await relay.declareUpload(original);
  if (probe.status === "deduped") return result(probe.file, true, 0);
  if (probe.status === "upload") {
    throw new CliError(`relay asked to upload ${name} before knowing how it is stored`);
  }

  const stored = gzipPays(file, level) ? await gzipToTemp(path, file, level) : identity(path, file);
  try {
    const { encoding, storedSize, storedSha256 } = stored;
    const answer = await relay.declareUpload({ ...original, encoding, storedSize, storedSha256 });
    if (answer.status === "deduped") return result(answer.file, true, 0); // Someone stored it meanwhile.
    if (answer.status === "missing") throw new CliError(`relay asked again how ${name} is stored`);
    await putStoredBytes(answer.put, stored, name, policy);
    return result(await relay.completeUpload(answer.uploadId, name), false, storedSize);
  } finally {
    await stored.dispose();
  }
}

function result(file: FileRecord, deduped: boolean, uploadedBytes: number): SendResult {
  const { fileId, name, size, sha256, url, expiresAt } = file;
  return { fileId, name, size, sha256, url, expiresAt, deduped, uploadedBytes, deliveries: [] };
}
