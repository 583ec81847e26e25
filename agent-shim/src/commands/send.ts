import { closeSync, openSync, statSync } from "node:fs";
import { stat } from "node:fs/promises";
import { parseCommandArgs } from "../cli/args.js";
import { ARCHIVE_TYPE, archiveDirectory } from "../archive/archive-build.js";
import {
  gzipLevel,
  relayConfig,
  retryPolicy,
  uploadAdaptive,
  uploadConcurrency,
  type RetryPolicy,
} from "../cli/config.js";
import { DESTINATION, DESTINATION_SHAPES } from "../download/destinations.js";
import { CliError, RefusalError, UsageError, fsError } from "../cli/errors.js";
import { HELP, USAGE } from "../cli/help.js";
import { note, print, warn } from "../cli/output.js";
import { RelayClient, type DeliveryRecord } from "../transport/relay-client.js";
import { toSendResult } from "../upload/send-line.js";
import type { FailedDelivery, SendResult } from "../upload/send-result.js";
import { sendStored } from "../upload/send-stored.js";
import { SentCacheOnDemand } from "../upload/sent-cache.js";
import { UploadStates } from "../upload/upload-state.js";
import { STDIN, checkedName, linkOptions, withLink } from "../upload/send-flags.js";
import { sendStdin, type SendOptions } from "../upload/send-small.js";
import { sendFile } from "../upload/send-file.js";
import { waitVerified } from "../upload/wait-verified.js";

export { sendFile } from "../upload/send-file.js";

const OPTIONS = {
  to: { type: "string", multiple: true },
  caption: { type: "string" },
  json: { type: "boolean" },
  wait: { type: "boolean" },
  "media-tag": { type: "boolean" },
  name: { type: "string" },
  expires: { type: "string" },
  "max-downloads": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

export type { FailedDelivery, SendResult } from "../upload/send-result.js";

/**
 * `airlock send <path|->... [--name <name>] [--to <platform:id>]... [--caption <text>]
 * [--expires <duration>] [--max-downloads <n>] [--json] [--media-tag]`: checks every path,
 * destination and option first, then sends each file, delivers it to each destination, and
 * prints its share URL. A failed delivery is reported and the rest carry on: the file is sent
 * all the same. `-` is standard input, named by `--name` (which may also rename one file) or
 * else by its type (`stdin.txt`).
 * With `--expires` or `--max-downloads` the printed URL is a link minted with those limits.
 *
 * Per file, stdout gets the bare URL as soon as the file is sent, or with --json a JSON line once
 * its deliveries are done. --media-tag prints `MEDIA:<url>` in place of the bare URL, for gateways
 * that route such lines; with --json as well, the MEDIA line comes first and the JSON line after
 * it, so each line is told by its first character (`M` or `{`).
 */
export async function send(args: string[]): Promise<void> {
  const { values, positionals: paths } = parseCommandArgs(args, OPTIONS, USAGE.send);
  if (values.help) return print(HELP);
  if (paths.length === 0) {
    throw new UsageError(`send needs at least one path; usage: ${USAGE.send}`);
  }
  const destinations = [...new Set(values.to ?? [])];
  for (const to of destinations) {
    if (!DESTINATION.test(to)) {
      throw new UsageError(`--to ${to} is not ${DESTINATION_SHAPES}; usage: ${USAGE.send}`);
    }
  }
  if (values.caption !== undefined && destinations.length === 0) {
    throw new UsageError(`--caption needs --to; usage: ${USAGE.send}`);
  }
  const rename = checkedName(values.name, paths);
  const link = linkOptions(values.expires, values["max-downloads"]);

  const policy = retryPolicy();
  const relay = new RelayClient(relayConfig(), policy);
  const options = sendOptions(relay, policy);
  const isDirectory = new Map<string, boolean>();
  for (const path of paths) {
    if (path !== STDIN) isDirectory.set(path, checkSendable(path));
  }
  let failed = false;
  for (const path of paths) {
    let result =
      path === STDIN
        ? await sendStdin(rename, options)
        : isDirectory.get(path)
          ? await sendDirectory(path, options, rename)
          : await sendFile(path, options, rename).finally(() => options.sent.save());
    if (link) result = await withLink(relay, result, link);
    if (result.status === "pending") {
      if (values.wait) result = { ...result, status: await waitVerified(relay, result) };
      else note(`${result.name} is still being verified by the relay (send --wait waits for it)`);
    }
    // First: the file is sent, whatever becomes of deliveries.
    if (values["media-tag"]) print(`MEDIA:${result.url}`);
    else if (!values.json) print(result.url);
    // One upload, then every destination at once; each reported in the order given.
    const outcomes = await Promise.all(
      destinations.map((to) => deliver(relay, result, to, values.caption)),
    );
    for (const { delivery, report } of outcomes) {
      report();
      failed ||= !acknowledged(delivery);
      result.deliveries.push(delivery);
    }
    if (values.json) print(JSON.stringify(result));
  }
  if (failed) process.exitCode = 1;
}

/** How files are sent, from the environment: shared by `send` and the `send_file` tool. */
export function sendOptions(relay: RelayClient, policy: RetryPolicy): SendOptions {
  return {
    relay,
    policy,
    concurrency: uploadConcurrency(),
    adaptive: uploadAdaptive(),
    states: UploadStates.at(),
    level: gzipLevel(),
    sent: new SentCacheOnDemand(),
  };
}

/** Delivered means the platform acknowledged the message with an id; nothing less counts. */
export function acknowledged(delivery: DeliveryRecord | FailedDelivery): boolean {
  return (
    delivery.status === "delivered" &&
    typeof delivery.messageId === "string" &&
    delivery.messageId !== ""
  );
}

/**
 * Delivers one sent file to one destination. The outcome's one stderr line is printed by
 * `report`, so deliveries running together still report in a fixed order.
 */
export async function deliver(
  relay: RelayClient,
  file: SendResult,
  to: string,
  caption: string | undefined,
): Promise<{ delivery: DeliveryRecord | FailedDelivery; report: () => void; warning?: string }> {
  try {
    const record = await relay.deliver(file.fileId, to, caption, file.name);
    if (!acknowledged(record)) {
      // A repeated Idempotency-Key answers with the first attempt, which may have failed.
      const reason =
        typeof record.error === "string"
          ? record.error
          : record.status === "delivered"
            ? "the platform gave no message id"
            : `it is ${record.status}`;
      const warning = `delivery of ${file.name} to ${to} failed: ${reason}`;
      return {
        delivery: { ...record, status: "failed", error: reason },
        report: () => warn(warning),
        warning,
      };
    }
    const how = record.mode === "native" ? `native, ${record.method}` : record.mode;
    return { delivery: record, report: () => note(`delivered ${file.name} to ${to} (${how})`) };
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    const refusal = err instanceof RefusalError ? err : undefined;
    const error = {
      code: refusal?.body.code ?? null,
      message: refusal?.body.message ?? err.message,
    };
    const warning = `delivery of ${file.name} to ${to} failed: ${refusal?.detail ?? err.message}`;
    return {
      delivery: { fileId: file.fileId, to, status: "failed", error },
      report: () => warn(warning),
      warning,
    };
  }
}

/**
 * A regular file or a directory this process can read; anything else fails before a byte is
 * sent. Says whether it is a directory. Synchronous, as `readSample` is.
 */
export function checkSendable(path: string): boolean {
  try {
    const info = statSync(path);
    if (info.isDirectory()) {
      closeSync(openSync(path, "r"));
      return true;
    }
    if (!info.isFile()) throw new UsageError(`${path} is not a regular file or a directory`);
    closeSync(openSync(path, "r"));
    return false;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw fsError("read", path, err);
  }
}

/**
 * Sends a directory as one `<dir>.tar.gz`, packed into a temp file first (streaming) and
 * uploaded as it is: already compressed, so with the identity encoding.
 */
export async function sendDirectory(
  path: string,
  options: SendOptions,
  rename: string | undefined,
): Promise<SendResult> {
  const { mtimeMs } = await stat(path).catch((err: unknown) => {
    throw fsError("read", path, err);
  });
  const archive = await archiveDirectory(path, options.level);
  try {
    const { storedSize: size, storedSha256: sha256, files } = archive;
    const declaration = {
      name: rename ?? archive.name,
      size,
      sha256,
      contentType: ARCHIVE_TYPE,
      encoding: "identity" as const,
      storedSize: size,
      storedSha256: sha256,
    };
    const sent = await sendStored(options, {
      declaration,
      stored: archive,
      source: { path, mtimeMs },
    });
    return { ...toSendResult(sent), archive: true, files };
  } finally {
    await archive.dispose();
  }
}
