import { createWriteStream } from "node:fs";
import { rename, stat } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { once } from "node:events";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { RetryPolicy } from "./config.js";
import { DigestStream } from "./digest.js";
import { CliError, NetworkError, fsError } from "./errors.js";
import { dispositionFileName, safeFileName } from "./file-names.js";
import { readText, request, statusError } from "./http.js";
import { Progress } from "./progress.js";
import { withRetry, type RetryTarget } from "./retry.js";
import { keepTemp, releaseTemp, tempPath } from "./temp-files.js";

/** What to fetch, and what is known about it beforehand. */
export interface DownloadSource {
  url: string;
  headers: Record<string, string>;
  target: RetryTarget;
  /** The file's name when known beforehand; otherwise the response's Content-Disposition names it. */
  name?: string;
  /**
   * The SHA-256 known beforehand (a file record's, an inbox item's): the bytes must have it, and
   * an ETag must agree with it.
   */
  sha256?: string;
}

/**
 * Where a download goes: stdout; a path named explicitly (overwritten); or a new file named
 * after the download in `dir`, never replacing one (`numbered` picks `name (1)` and so on when the
 * name is taken; otherwise a taken name is an error).
 */
export type Output =
  { to: "stdout" } | { to: "path"; path: string } | { to: "dir"; dir: string; numbered: boolean };

/** Where a download went: a file path, or "-" for stdout. */
export interface Downloaded {
  path: string;
  /** The name the file goes by (unsanitised: as the relay or the response gives it). */
  name: string;
  size: number;
}

/** The name a download gets when neither the caller nor the response gives one. */
const UNNAMED = "download";

/**
 * Streams a file's bytes to a temp file next to the destination, verifies their SHA-256 (the
 * ETag's, or the one known beforehand), then gives the temp file its name. Nothing is left behind
 * when the bytes do not match; bytes for stdout are verified after the fact.
 */
export function download(
  source: DownloadSource,
  output: Output,
  policy: RetryPolicy,
): Promise<Downloaded> {
  return withRetry(policy, source.target, async () => {
    const { action } = source.target;
    const res = await request({ method: "GET", url: source.url, headers: source.headers });
    const status = res.statusCode ?? 0;
    if (status !== 200) {
      throw statusError(res, await readText(res), `${source.target.service} refused ${action}`);
    }
    const etag = etagSha256(res);
    const known = source.sha256?.toLowerCase();
    if (etag && known && etag !== known) {
      res.destroy();
      throw new CliError(`the ${action} is corrupt: its ETag does not match the expected SHA-256`);
    }
    const sha256 = etag ?? known;
    if (!sha256) {
      res.destroy();
      throw new CliError(`${source.target.service} sent no ETag to verify the ${action} against`);
    }
    const name = source.name ?? dispositionFileName(res.headers) ?? UNNAMED;
    const length = res.headers["content-length"];
    const against = etag ? "the ETag" : "the expected SHA-256";
    const digest = new DigestStream({
      bytes: length === undefined ? undefined : Number(length),
      sha256,
      mismatch: () =>
        new CliError(`the ${action} is corrupt: its SHA-256 does not match ${against}`),
    });
    if (output.to === "stdout") return toStdout(res, digest, name);
    if (output.to === "path") {
      const { path } = output;
      const size = await toFile(res, digest, path, name, (temp) => rename(temp, path));
      return { path, name, size };
    }
    const fileName = safeFileName(name, "file");
    const { dir, numbered } = output;
    if (!numbered) await refuseExisting(join(dir, fileName)); // Before the bytes, not after.
    let path = join(dir, fileName);
    const size = await toFile(res, digest, path, fileName, async (temp) => {
      path = await keepTemp(temp, dir, fileName, numbered);
    });
    return { path, name, size };
  });
}

async function refuseExisting(path: string): Promise<void> {
  if (await stat(path).catch(() => undefined)) {
    throw new CliError(`${path} already exists; name it with -o to overwrite it`);
  }
}

/**
 * Streams the verified bytes to a temp file next to `path` (where they are headed, for messages),
 * under a progress bar named `label`, then has `place` give the temp file its name.
 */
async function toFile(
  res: IncomingMessage,
  digest: DigestStream,
  path: string,
  label: string,
  place: (temp: string) => Promise<void>,
): Promise<number> {
  const temp = tempPath(dirname(path), ".airlock-", ".part");
  const progress = new Progress(label, Number(res.headers["content-length"] ?? 0));
  try {
    const out = createWriteStream(temp, { flags: "wx" });
    await pipeline(res, digest, progress.meter(), out).catch((err: unknown) => {
      // A file-system error names its path; anything else not ours is the connection failing.
      if (err instanceof CliError) throw err;
      throw hasPath(err) ? fsError("write", path, err) : new NetworkError(err);
    });
    await place(temp).catch((err: unknown) => {
      throw err instanceof CliError ? err : fsError("write", path, err);
    });
    return digest.bytes;
  } finally {
    progress.finish();
    await releaseTemp(temp); // A no-op once it has its name.
  }
}

async function toStdout(
  res: IncomingMessage,
  digest: DigestStream,
  name: string,
): Promise<Downloaded> {
  let written = false;
  await pipeline(res, digest, async (chunks: AsyncIterable<Buffer>) => {
    for await (const chunk of chunks) {
      written = true;
      if (!process.stdout.write(chunk)) await once(process.stdout, "drain");
    }
  }).catch((err: unknown) => {
    if (err instanceof CliError) throw err;
    const lost = new NetworkError(err);
    // Bytes already on stdout cannot be taken back, so a retry would duplicate them.
    if (written) {
      throw new CliError(`connection lost while writing ${name} to stdout: ${lost.message}`);
    }
    throw lost;
  });
  return { path: "-", name, size: digest.bytes };
}

function hasPath(err: unknown): boolean {
  return typeof err === "object" && err !== null && "path" in err;
}

function etagSha256(res: IncomingMessage): string | undefined {
  const match = /^(?:W\/)?"([0-9a-f]{64})"$/i.exec(res.headers.etag ?? "");
  return match?.[1]?.toLowerCase();
}
