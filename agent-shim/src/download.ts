import { createWriteStream } from "node:fs";
import { rename, stat } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { once } from "node:events";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { RetryPolicy } from "./config.js";
import { DigestStream } from "./digest.js";
import { CliError, NetworkError, RetryableStatusError, fsError } from "./errors.js";
import { dispositionFileName, safeFileName } from "./file-names.js";
import { describeErrorBody, isRetryableStatus, readText, request, retryAfterMs } from "./http.js";
import { Progress } from "./progress.js";
import { withRetry, type RetryTarget } from "./retry.js";
import { releaseTemp, tempPath } from "./temp-files.js";

/** What to fetch, and what is known about it beforehand. */
export interface DownloadSource {
  url: string;
  headers: Record<string, string>;
  target: RetryTarget;
  /** The name to use when the response names none. */
  name: string;
  /** The SHA-256 to verify against when the response has no ETag. */
  sha256?: string;
}

/** Where a download went: a file path, or "-" for stdout. */
export interface Downloaded {
  path: string;
  name: string;
  size: number;
}

/**
 * Streams a file's bytes to a temp file next to the destination, verifies them against the
 * SHA-256 in the `ETag`, then renames the temp file into place. `output` is `-o`: absent (the
 * file's name here, never overwriting), an existing directory (the file's name there), a path
 * (overwritten: it was named explicitly) or `-` (stdout, verified after the fact).
 */
export function download(
  source: DownloadSource,
  output: string | undefined,
  policy: RetryPolicy,
): Promise<Downloaded> {
  return withRetry(policy, source.target, async () => {
    const res = await request({ method: "GET", url: source.url, headers: source.headers });
    const status = res.statusCode ?? 0;
    if (status !== 200) {
      const detail = describeErrorBody(status, await readText(res));
      if (isRetryableStatus(status)) {
        throw new RetryableStatusError(status, detail, retryAfterMs(res));
      }
      throw new CliError(`${source.target.service} refused ${source.target.action}: ${detail}`);
    }
    const sha256 = etagSha256(res) ?? source.sha256;
    if (!sha256) {
      res.destroy();
      throw new CliError(
        `${source.target.service} sent no ETag to verify the ${source.target.action} against`,
      );
    }
    const name = dispositionFileName(res.headers) ?? source.name;
    const length = res.headers["content-length"];
    const digest = new DigestStream({
      bytes: length === undefined ? undefined : Number(length),
      sha256,
      mismatch: () =>
        new CliError(`the ${source.target.action} is corrupt: its SHA-256 does not match the ETag`),
    });
    if (output === "-") return toStdout(res, digest, name);
    const path = await destination(output, name);
    return { path, name, size: await toFile(res, digest, path, name) };
  });
}

async function destination(output: string | undefined, name: string): Promise<string> {
  const fileName = safeFileName(name, "download");
  let path = output ?? fileName;
  const existing = await stat(path).catch(() => undefined);
  if (output !== undefined && !existing?.isDirectory()) return path; // Named explicitly: overwrite.
  if (existing?.isDirectory()) path = join(path, fileName);
  if (await stat(path).catch(() => undefined)) {
    throw new CliError(`${path} already exists; name it with -o to overwrite it`);
  }
  return path;
}

async function toFile(
  res: IncomingMessage,
  digest: DigestStream,
  path: string,
  name: string,
): Promise<number> {
  const temp = tempPath(dirname(path), ".airlock-", ".part");
  const progress = new Progress(name, Number(res.headers["content-length"] ?? 0));
  try {
    const out = createWriteStream(temp, { flags: "wx" });
    await pipeline(res, digest, progress.meter(), out).catch((err: unknown) => {
      // A file-system error names its path; anything else not ours is the connection failing.
      if (err instanceof CliError) throw err;
      throw hasPath(err) ? fsError("write", path, err) : new NetworkError(err);
    });
    await rename(temp, path).catch((err: unknown) => {
      throw fsError("write", path, err);
    });
    return digest.bytes;
  } finally {
    progress.finish();
    await releaseTemp(temp); // A no-op once renamed into place.
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
