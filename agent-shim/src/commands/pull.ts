import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { parseCommandArgs } from "../args.js";
import { archiveStem, extractArchive } from "../archive-extract.js";
import { DEFAULT_PULL_DIR, relayConfig, retryPolicy, type RetryPolicy } from "../config.js";
import { CliError, UnavailableError, UsageError, fsError } from "../errors.js";
import { HELP, USAGE } from "../help.js";
import { download } from "../download.js";
import { safeFileName } from "../file-names.js";
import { humanSize } from "../human-size.js";
import { print, warn } from "../output.js";
import { RelayClient, type InboxItem } from "../relay-client.js";
import { releaseTemp, tempPath } from "../temp-files.js";

const OPTIONS = {
  dir: { type: "string" },
  json: { type: "boolean" },
  extract: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** One line of `pull --json`. */
export interface PullResult {
  itemId: string;
  fileId: string;
  name: string;
  size: number;
  sha256: string;
  path: string;
  source: string;
  /** With --extract, for a `.tar.gz`: `path` is the directory it was extracted to. */
  extracted?: true;
  /** With --extract, for a `.tar.gz`: how many regular files it held. */
  files?: number;
}

/**
 * `airlock pull [--dir <dir>] [--json] [--extract]`: writes each file waiting in the inbox into the
 * directory (oldest first, verified, under a safe name that replaces nothing), acknowledges it only
 * once it is there, and prints a line per file. A file that fails is reported and stays in the
 * inbox; the others carry on, unless the relay itself is out of reach.
 *
 * With --extract, a `.tar.gz` is extracted into a new directory named after it (`proj.tar.gz` to
 * `proj/`, or `proj (1)/` when taken) instead of being written: the archive itself is not kept.
 * An archive with an entry that would escape that directory is refused whole and stays in the inbox.
 */
export async function pull(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, USAGE.pull);
  if (values.help) return print(HELP);
  if (positionals.length > 0) {
    throw new UsageError(`pull takes no arguments; usage: ${USAGE.pull}`);
  }
  if (values.dir === "") throw new UsageError(`--dir needs a directory; usage: ${USAGE.pull}`);
  const dir = resolve(values.dir ?? DEFAULT_PULL_DIR);
  const policy = retryPolicy();
  const relay = new RelayClient(relayConfig(), policy);

  const items = await relay.listInbox();
  if (items.length === 0) return;
  await mkdir(dir, { recursive: true }).catch((err: unknown) => {
    throw fsError("create directory", dir, err);
  });
  let failed = false;
  for (const item of items) {
    try {
      const pulled = await pullItem(relay, item, dir, policy, values.extract === true);
      const name = safeFileName(item.name, "file"); // As written: no newline, no path.
      print(values.json ? JSON.stringify(pulled) : contextLine(name, pulled));
      await relay.ack(item.itemId, name);
    } catch (err) {
      // An unreachable relay fails every item alike: one line says it.
      if (!(err instanceof CliError) || err instanceof UnavailableError) throw err;
      warn(err.message);
      failed = true;
    }
  }
  if (failed) process.exitCode = 1;
}

/** Downloads one item's file into `dir`, verified against the item's SHA-256. */
async function pullItem(
  relay: RelayClient,
  item: InboxItem,
  dir: string,
  policy: RetryPolicy,
  extract: boolean,
): Promise<PullResult> {
  const fileId = item.file?.fileId ?? item.fileId;
  if (!fileId) throw new CliError(`relay listed ${item.name} in the inbox without its file`);
  const { url, headers } = relay.contentRequest(fileId);
  const source = {
    url,
    headers,
    target: { service: "relay" as const, url: relay.url, action: `download of ${item.name}` },
    name: item.name,
    sha256: item.sha256,
  };
  const { itemId, name, sha256 } = item;
  const stem = extract ? archiveStem(item.name) : undefined;
  if (stem !== undefined) {
    const temp = tempPath(dir, ".airlock-", ".tar.gz");
    try {
      const { size } = await download(source, { to: "path", path: temp }, policy);
      const { path, files } = await extractArchive(temp, item.name, dir, stem, true);
      return {
        itemId,
        fileId,
        name,
        size,
        sha256,
        path,
        source: item.source,
        extracted: true,
        files,
      };
    } finally {
      await releaseTemp(temp);
    }
  }
  const { path, size } = await download(source, { to: "dir", dir, numbered: true }, policy);
  return { itemId, fileId, name, size, sha256, path, source: item.source };
}

/** What an agent reads about a file it was sent. */
function contextLine(name: string, pulled: PullResult): string {
  if (pulled.extracted) {
    return `[User uploaded: ${name} (${humanSize(pulled.size)}), extracted to ${pulled.path}/]`;
  }
  return `[User uploaded: ${name} (${humanSize(pulled.size)}) at ${pulled.path}]`;
}
