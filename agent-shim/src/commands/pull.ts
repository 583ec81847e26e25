import { chmod, lstat, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { parseCommandArgs } from "../cli/args.js";
import { archiveStem, extractArchive } from "../archive/archive-extract.js";
import { extractLimits, type ExtractLimits } from "../archive/archive-limit.js";
import { relayConfig, retryPolicy, type RetryPolicy } from "../cli/config.js";
import { parseDuration } from "../cli/duration.js";
import { CliError, UnavailableError, UsageError, fsError } from "../cli/errors.js";
import { PULL_TIMEOUT_EXIT, USAGE, commandHelp } from "../cli/help.js";
import { download } from "../download/download.js";
import { safeFileName } from "../download/file-names.js";
import { inboxDir } from "../download/inbox-dir.js";
import { humanSize } from "../../../src/services/human-size.js";
import { note, print, warn } from "../cli/output.js";
import { shownDuration, waitForInbox } from "./inbox-wait.js";
import { RelayClient, type InboxItem } from "../transport/relay-client.js";
import { releaseTemp, tempPath } from "../upload/temp-files.js";

const OPTIONS = {
  dir: { type: "string" },
  json: { type: "boolean" },
  extract: { type: "boolean" },
  "max-bytes": { type: "string" },
  "max-entries": { type: "string" },
  readonly: { type: "boolean" },
  wait: { type: "boolean" },
  timeout: { type: "string" },
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
 * `airlock pull [--dir <dir>] [--wait] [--timeout <duration>] [--json] [--extract]`: writes each
 * file waiting in the inbox into the directory (`--dir`, else `$AIRLOCK_INBOX_DIR`, else
 * `./uploads`; oldest first, verified, under a safe name that replaces nothing), acknowledges it
 * only once it is there, and prints a line per file. A file that fails is reported and stays in
 * the inbox; the others carry on, unless the relay itself is out of reach.
 *
 * With nothing waiting it says so on stderr and exits 0; with --wait it waits for something to
 * arrive instead, and with --timeout as well gives up after that long (exit 3).
 *
 * With --readonly, each file written (with --extract, each file extracted) is left mode 0444.
 *
 * With --extract, a `.tar.gz` is extracted into a new directory named after it (`proj.tar.gz` to
 * `proj/`, or `proj (1)/` when taken) instead of being written: the archive itself is not kept.
 * An archive with an entry that would escape that directory (or a name that breaks the name rule,
 * or more than `--max-bytes` of content) is refused whole and stays in the inbox.
 *
 * A file that cannot be pulled (refused, corrupt, unreadable headers, unwritable) never holds up
 * the others: one stderr line names it, it is not acknowledged, and the exit status is 1 once
 * the rest are done. Only a relay that is out of reach for everything ends the run early.
 */
export async function pull(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, USAGE.pull);
  if (values.help) return print(commandHelp("pull"));
  if (positionals.length > 0) {
    throw new UsageError(`pull takes no arguments; usage: ${USAGE.pull}`);
  }
  if (values.dir === "") throw new UsageError(`--dir needs a directory; usage: ${USAGE.pull}`);
  for (const flag of ["max-bytes", "max-entries"] as const) {
    if (values[flag] !== undefined && !values.extract) {
      throw new UsageError(`--${flag} limits --extract; usage: ${USAGE.pull}`);
    }
  }
  if (values.timeout !== undefined && !values.wait) {
    throw new UsageError(`--timeout needs --wait; usage: ${USAGE.pull}`);
  }
  const timeout =
    values.timeout === undefined
      ? undefined
      : parseDuration(values.timeout, "--timeout", USAGE.pull);
  const limits = extractLimits(values, USAGE.pull);
  const dir = inboxDir(values.dir);
  const policy = retryPolicy();
  const relay = new RelayClient(relayConfig(), policy);

  const items = values.wait ? await waitForInbox(relay, timeout) : await relay.listInbox();
  if (items === undefined) {
    warn(`nothing arrived in the inbox within ${shownDuration(timeout!)}`);
    process.exitCode = PULL_TIMEOUT_EXIT;
    return;
  }
  if (items.length === 0) return note("nothing new in the inbox");
  const extract = values.extract === true ? limits : undefined;
  const readonly = values.readonly === true;
  const pulled = (result: PullResult, line: string) =>
    print(values.json ? JSON.stringify(result) : line);
  const failed = await pullItems(relay, items, { dir, policy, extract, readonly, pulled });
  if (failed) process.exitCode = 1;
}

/** How `pullItems` writes, and where each file written is reported. */
export interface PullRun {
  dir: string;
  policy: RetryPolicy;
  /** Extract a `.tar.gz` within these limits (bytes, entries), rather than write it. */
  extract: ExtractLimits | undefined;
  readonly: boolean;
  /** A file written, with its context line, as soon as it is there. */
  pulled: (result: PullResult, line: string) => void;
  /** A file that failed, in one line; by default on stderr. */
  failed?: (message: string) => void;
}

/**
 * Writes `items` into `run.dir` (created if missing), oldest first, acknowledging each once it
 * is there; shared by `pull` and the `receive_files` tool. Says whether any failed.
 */
export async function pullItems(
  relay: RelayClient,
  items: InboxItem[],
  run: PullRun,
): Promise<boolean> {
  const { dir, policy, extract, failed: report = warn } = run;
  await mkdir(dir, { recursive: true }).catch((err: unknown) => {
    throw fsError("create directory", dir, err);
  });
  let failed = false;
  for (const item of items) {
    const name = pulledName(item.name);
    const which = `item ${shownId(item.itemId)} (${name})`;
    let pulled: PullResult;
    try {
      pulled = await pullItem(relay, item, name, dir, policy, extract);
      if (run.readonly) await makeReadOnly(pulled.path);
    } catch (err) {
      await carryOn(relay, err);
      report(`could not pull ${which}, it stays in the inbox: ${(err as CliError).message}`);
      failed = true;
      continue;
    }
    run.pulled(pulled, contextLine(name, pulled));
    try {
      await relay.ack(item.itemId, name);
    } catch (err) {
      await carryOn(relay, err);
      report(`could not acknowledge ${which}: ${(err as CliError).message}`);
      failed = true;
    }
  }
  return failed;
}

/**
 * `--readonly`: mode 0444 for a pulled file, or for every regular file under an extracted
 * directory (symlinks are not followed). A guard against accidental edits, not a lock: the
 * file's owner can change the mode back, and root ignores it.
 */
async function makeReadOnly(path: string): Promise<void> {
  const info = await lstat(path).catch((err: unknown) => {
    throw fsError("read", path, err);
  });
  if (info.isFile()) {
    await chmod(path, 0o444).catch((err: unknown) => {
      throw fsError("make read-only", path, err);
    });
    return;
  }
  if (!info.isDirectory()) return;
  const entries = await readdir(path).catch((err: unknown) => {
    throw fsError("read", path, err);
  });
  for (const entry of entries) await makeReadOnly(join(path, entry));
}

/**
 * Returns when the run can go on after `err` failed one item; rethrows what is no item's own
 * failure. A service out of reach through every retry may be this item's alone (its bytes cut
 * off mid-way): one more look at the inbox tells; when the relay is out of reach for that too,
 * its error ends the run as one line.
 */
async function carryOn(relay: RelayClient, err: unknown): Promise<void> {
  if (!(err instanceof CliError)) throw err;
  if (err instanceof UnavailableError) await relay.listInbox();
}

/**
 * The name a pulled file is written and shown under: the shared name rule, then square
 * brackets made round, so that no name can close the context line's bracket early.
 */
export function pulledName(name: string): string {
  return safeFileName(name, "file").replace(/\[/g, "(").replace(/\]/g, ")");
}

/** An item id as the relay gave it, for a message: printable ASCII only. */
function shownId(itemId: string): string {
  return itemId.replace(/[^\x21-\x7e]/g, "?").slice(0, 100);
}

/**
 * Downloads one item's file into `dir` as `shown` (its `pulledName`), verified against the
 * item's SHA-256; with `extractMax`, extracts a `.tar.gz` within those limits.
 */
async function pullItem(
  relay: RelayClient,
  item: InboxItem,
  shown: string,
  dir: string,
  policy: RetryPolicy,
  extractMax: ExtractLimits | undefined,
): Promise<PullResult> {
  const fileId = item.file?.fileId ?? item.fileId;
  if (!fileId) throw new CliError(`relay listed ${shown} in the inbox without its file`);
  const { url, headers } = relay.contentRequest(fileId);
  const source = {
    url,
    headers,
    target: { service: "relay" as const, url: relay.url, action: `download of ${shown}` },
    name: shown,
    sha256: item.sha256,
    size: item.size,
  };
  const { itemId, name, sha256 } = item;
  const stem = archiveStem(shown);
  if (extractMax !== undefined && stem !== undefined) {
    const temp = tempPath(dir, ".airlock-", ".tar.gz");
    try {
      const { size } = await download(source, { to: "path", path: temp }, policy);
      const { path, files } = await extractArchive(temp, shown, dir, stem, true, extractMax);
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

/**
 * What an agent reads about a file it was sent: one line, ending with the exact path written
 * (the name shown and written cannot hold a newline or a `]`).
 */
function contextLine(name: string, pulled: PullResult): string {
  if (pulled.extracted) {
    return `[User uploaded: ${name} (${humanSize(pulled.size)}), extracted to ${pulled.path}/]`;
  }
  return `[User uploaded: ${name} (${humanSize(pulled.size)}) at ${pulled.path}]`;
}
