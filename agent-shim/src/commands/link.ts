import { parseCommandArgs } from "../cli/args.js";
import { relayConfig, retryPolicy } from "../cli/config.js";
import { parseDuration } from "../cli/duration.js";
import { RefusalError, UsageError } from "../cli/errors.js";
import { USAGE, commandHelp } from "../cli/help.js";
import { print } from "../cli/output.js";
import { RelayClient, type LinkOptions } from "../transport/relay-client.js";

const OPTIONS = {
  expires: { type: "string" },
  "max-downloads": { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** The relay's cap on a link's download limit. */
const MAX_DOWNLOADS = 1_000_000;

/**
 * `airlock link <fileId> [--expires <duration>] [--max-downloads <n>] [--json]`: mints a fresh
 * share link to one of the session's files and prints it (with --json, `{ fileId, url,
 * expiresAt, maxDownloads }`). The file's other links are not changed.
 */
export async function link(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, USAGE.link);
  if (values.help) return print(commandHelp("link"));
  const [fileId, ...extra] = positionals;
  if (fileId === undefined || fileId === "" || extra.length > 0) {
    throw new UsageError(`link takes exactly one file id; usage: ${USAGE.link}`);
  }
  const options: LinkOptions = {};
  if (values.expires !== undefined) {
    options.ttlSeconds = parseDuration(values.expires, "--expires", USAGE.link);
  }
  if (values["max-downloads"] !== undefined) {
    options.maxDownloads = downloadLimit(values["max-downloads"]);
  }
  const relay = new RelayClient(relayConfig(), retryPolicy());
  const minted = await relay.createLink(fileId, options).catch((err: unknown) => {
    throw inOurWords(err);
  });
  const { url, expiresAt, maxDownloads } = minted;
  print(values.json ? JSON.stringify({ fileId, url, expiresAt, maxDownloads }) : url);
}

function downloadLimit(text: string): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_DOWNLOADS) {
    throw new UsageError(
      `--max-downloads must be a whole number from 1 to ${MAX_DOWNLOADS}, not ${text}; usage: ${USAGE.link}`,
    );
  }
  return n;
}

/** The relay names the JSON field (`ttlSeconds`); the person typed `--expires`. */
function inOurWords(err: unknown): unknown {
  if (!(err instanceof RefusalError) || !err.message.includes("ttlSeconds: ")) return err;
  const message = err.message.replace("ttlSeconds: ", "--expires: ");
  return new RefusalError(message, err.status, err.detail, err.body);
}
