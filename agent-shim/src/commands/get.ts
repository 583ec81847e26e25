import { mkdir, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { parseCommandArgs } from "../cli/args.js";
import { archiveStem, extractArchive } from "../archive/archive-extract.js";
import { extractLimits, type ExtractLimits } from "../archive/archive-limit.js";
import { relayConfig, retryPolicy } from "../cli/config.js";
import { CliError, UsageError, fsError } from "../cli/errors.js";
import { USAGE, commandHelp } from "../cli/help.js";
import { download, type DownloadSource, type Output } from "../download/download.js";
import { safeFileName } from "../download/file-names.js";
import { note, print } from "../cli/output.js";
import { RelayClient } from "../transport/relay-client.js";
import { releaseTemp, tempPath } from "../upload/temp-files.js";

const OPTIONS = {
  output: { type: "string", short: "o" },
  extract: { type: "boolean" },
  "max-bytes": { type: "string" },
  "max-entries": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * `airlock get <fileId|shareUrl> [-o <path>] [--extract]`: downloads and verifies a file, then
 * prints the path written (on stderr when the bytes went to stdout). With --extract, the file must
 * be a `.tar.gz`: it is extracted into a new directory named after it in `-o <dir>` (default: the
 * current directory), and that directory's path is printed; the archive itself is not kept. An
 * archive holding more than `--max-bytes` of content (default 10 GiB) is refused, nothing kept.
 */
export async function get(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, USAGE.get);
  if (values.help) return print(commandHelp("get"));
  const [ref, ...extra] = positionals;
  if (ref === undefined || extra.length > 0) {
    throw new UsageError(`get takes exactly one file id or share URL; usage: ${USAGE.get}`);
  }
  if (values.extract && values.output === "-") {
    throw new UsageError(`--extract needs a directory, not stdout; usage: ${USAGE.get}`);
  }
  for (const flag of ["max-bytes", "max-entries"] as const) {
    if (values[flag] !== undefined && !values.extract) {
      throw new UsageError(`--${flag} limits --extract; usage: ${USAGE.get}`);
    }
  }
  const limits = extractLimits(values, USAGE.get);
  const policy = retryPolicy();
  const source = /^https?:\/\//i.test(ref) ? shareSource(ref) : await fileSource(ref, policy);
  if (values.extract) {
    return print(await getExtracted(source, values.output ?? ".", policy, limits));
  }
  const written = await download(source, await output(values.output), policy);
  if (written.path === "-") note(`wrote ${safeFileName(written.name, "the file")} to stdout`);
  else print(written.path);
}

/**
 * Downloads a `.tar.gz` next to where it goes, then extracts it (within `limits`);
 * returns the directory made.
 */
async function getExtracted(
  source: DownloadSource,
  option: string,
  policy: ReturnType<typeof retryPolicy>,
  limits: ExtractLimits,
): Promise<string> {
  if (source.name !== undefined && archiveStem(source.name) === undefined) {
    throw notAnArchive(source.name);
  }
  const dir = resolve(option);
  await mkdir(dir, { recursive: true }).catch((err: unknown) => {
    throw fsError("create directory", option, err);
  });
  const temp = tempPath(dir, ".airlock-", ".tar.gz");
  try {
    const { name } = await download(source, { to: "path", path: temp }, policy);
    const stem = archiveStem(name);
    if (stem === undefined) throw notAnArchive(name); // A share link names it only now.
    const label = safeFileName(name, "the archive");
    return (await extractArchive(temp, label, dir, stem, false, limits)).path;
  } finally {
    await releaseTemp(temp);
  }
}

function notAnArchive(name: string): CliError {
  const shown = safeFileName(name, "the file");
  return new CliError(`${shown} is not a .tar.gz archive; get it without --extract`);
}

/**
 * `-o`: absent (the file's name here, never overwriting), an existing directory (the file's name
 * there), `-` (stdout) or any other path (overwritten: it was named explicitly).
 */
async function output(option: string | undefined): Promise<Output> {
  if (option === "-") return { to: "stdout" };
  const existing = option === undefined ? undefined : await stat(option).catch(() => undefined);
  if (option === undefined || existing?.isDirectory()) {
    return { to: "dir", dir: option ?? ".", numbered: false };
  }
  return { to: "path", path: option };
}

/** A share link carries its own authorisation: no token, no AIRLOCK_URL needed. */
function shareSource(link: string): DownloadSource {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    throw new UsageError(`not a valid share URL: ${link}`);
  }
  if (!/\/d\/[^/]+$/.test(url.pathname)) {
    throw new UsageError(`not a share URL (expected …/d/<token>): ${link}`);
  }
  return {
    url: url.href,
    headers: {},
    target: { service: "relay", url: url.origin, action: "download of the shared file" },
  };
}

async function fileSource(
  fileId: string,
  policy: ReturnType<typeof retryPolicy>,
): Promise<DownloadSource> {
  const relay = new RelayClient(relayConfig(), policy);
  const record = await relay.getFile(fileId);
  const { url, headers } = relay.contentRequest(fileId);
  return {
    url,
    headers,
    target: {
      service: "relay",
      url: relay.url,
      action: `download of ${safeFileName(record.name, "the file")}`,
    },
    name: record.name,
    sha256: record.sha256,
    size: record.size,
  };
}
