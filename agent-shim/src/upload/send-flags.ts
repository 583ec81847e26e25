import { parseDuration } from "../cli/duration.js";
import { RefusalError, UsageError } from "../cli/errors.js";
import { USAGE } from "../cli/help.js";
import type { LinkOptions, RelayClient } from "../transport/relay-client.js";
import type { SendResult } from "./send-result.js";
import { fileNameProblem } from "../../../src/names.js";

/** The path that means standard input. */
export const STDIN = "-";
/** The relay's cap on a link's download limit. */
const MAX_DOWNLOADS = 1_000_000;

/**
 * `--name`: allowed with one path or `-` (which is otherwise named by its type, see
 * stdin-name.ts), and held to the relay's name rule here so that a bad one is a usage error
 * before anything is read.
 */
export function checkedName(name: string | undefined, paths: string[]): string | undefined {
  const stdin = paths.filter((path) => path === STDIN).length;
  if (stdin > 1)
    throw new UsageError(`- (standard input) can be sent only once; usage: ${USAGE.send}`);
  if (name === undefined) return undefined;
  if (paths.length !== 1) {
    throw new UsageError(`--name names one file; give one path or -; usage: ${USAGE.send}`);
  }
  const problem = fileNameProblem(name);
  if (problem)
    throw new UsageError(`--name ${JSON.stringify(name)} ${problem}; usage: ${USAGE.send}`);
  return name;
}

/** `--expires` and `--max-downloads`, or undefined when neither is given. */
export function linkOptions(
  expires: string | undefined,
  maxDownloads: string | undefined,
): LinkOptions | undefined {
  if (expires === undefined && maxDownloads === undefined) return undefined;
  const options: LinkOptions = {};
  if (expires !== undefined) options.ttlSeconds = parseDuration(expires, "--expires", USAGE.send);
  if (maxDownloads !== undefined) {
    const n = /^\d+$/.test(maxDownloads.trim()) ? Number(maxDownloads.trim()) : NaN;
    if (!Number.isSafeInteger(n) || n < 1 || n > MAX_DOWNLOADS) {
      throw new UsageError(
        `--max-downloads must be a whole number from 1 to ${MAX_DOWNLOADS}, not ${maxDownloads}; usage: ${USAGE.send}`,
      );
    }
    options.maxDownloads = n;
  }
  return options;
}

/** The sent file with a link of its own limits in place of the relay's default one. */
export async function withLink(
  relay: RelayClient,
  sent: SendResult,
  options: LinkOptions,
): Promise<SendResult> {
  const minted = await relay.createLink(sent.fileId, options).catch((err: unknown) => {
    // The relay names its JSON field; the person typed --expires.
    if (err instanceof RefusalError && err.message.includes("ttlSeconds: ")) {
      const message = err.message.replace("ttlSeconds: ", "--expires: ");
      throw new RefusalError(message, err.status, err.detail, err.body);
    }
    throw err;
  });
  return { ...sent, url: minted.url, expiresAt: minted.expiresAt };
}
