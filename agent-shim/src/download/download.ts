import { open, rename, stat } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { basename, dirname, join } from "node:path";
import type { RetryPolicy } from "../cli/config.js";
import { DigestStream } from "../upload/digest.js";
import {
  contentLength,
  contentRange,
  etagSha256,
  expectedFromHint,
  expectedOf,
  headHint,
  refusal,
  type Expected,
  type Hint,
} from "./download-headers.js";
import { drain, SinkWriteError } from "./body-sink.js";
import { getFollowing } from "./download-redirect.js";
import { rangedDownload, WholeAnswer } from "./parallel-download.js";
import { forgetRanges } from "./parallel-pieces.js";
import { mayRange, parallelSettings, type ParallelSettings } from "./parallel-settings.js";
import { toStdout } from "./download-stdout.js";
import { CliError, NetworkError, RetryableStatusError, fsError } from "../cli/errors.js";
import { safeFileName } from "./file-names.js";
import { readText } from "../transport/http.js";
import { PartFile } from "../upload/part-file.js";
import { Progress } from "../cli/progress.js";
import { withRetry, type RetryTarget } from "../transport/retry.js";
import { isTemp, keepTemp } from "../upload/temp-files.js";

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
  /** The file's size when known beforehand: a small one downloads without asking for ranges. */
  size?: number;
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

/**
 * Streams a file's bytes to a part file next to the destination, verifies their SHA-256 (the
 * ETag's, or the one known beforehand), then gives the part file its name. A retry after the
 * connection fails mid-body asks for the rest with `Range` (and `If-Range`), and a part file left
 * by a killed run is resumed the same way (see `PartFile`). Nothing is left behind when the
 * download fails or the bytes do not match; bytes for stdout are verified after the fact.
 */
export function download(
  source: DownloadSource,
  output: Output,
  policy: RetryPolicy,
): Promise<Downloaded> {
  if (output.to !== "stdout") return toFile(source, output, policy);
  return withRetry(policy, source.target, async () => {
    const res = await getFollowing(source.url, source.headers);
    if (res.statusCode !== 200) throw await refusal(res, source);
    const { sha256, against, name } = expectedOf(res, source, {});
    const digest = new DigestStream({ bytes: contentLength(res), sha256, mismatch: against });
    return toStdout(res, digest, name);
  });
}

async function toFile(
  source: DownloadSource,
  output: Exclude<Output, { to: "stdout" }>,
  policy: RetryPolicy,
): Promise<Downloaded> {
  // Into a temp file of the caller's (to extract it), the download cannot be resumed by a new run.
  const resumable = output.to === "dir" || !isTemp(output.path);
  const settings = parallelSettings();
  const ranged = mayRange(settings, source.size);
  const ask = (resumable && source.sha256 === undefined) || ranged;
  // Size and SHA-256 known (an inbox item, a file record): no HEAD, the ranges ask for
  // themselves (a relay that answers one whole is then asked again in one stream).
  const known = knownHint(source);
  const hint = ask ? (known ?? (await headHint(source.url, source.headers))) : {};
  const early = source.name ?? hint.name;
  let partName: string | undefined;
  if (output.to === "path") partName = resumable ? basename(output.path) : undefined;
  else if (early !== undefined) partName = safeFileName(early, "file");
  if (output.to === "dir" && !output.numbered && partName !== undefined) {
    await refuseExisting(join(output.dir, partName)); // Before the bytes, not after.
  }
  const dir = output.to === "dir" ? output.dir : dirname(output.path);
  let sha256 = source.sha256?.toLowerCase() ?? hint.sha256;
  const part = await PartFile.open(dir, partName, sha256);
  let placed = false;
  const destination = async (name: string) => {
    const path = output.to === "path" ? output.path : join(dir, safeFileName(name, "file"));
    if (output.to === "dir" && !output.numbered) await refuseExisting(path);
    const label = output.to === "path" ? safeFileName(name, "file") : basename(path);
    return { path, label };
  };
  try {
    // Ranges only where the relay names the content (an ETag): each range carries `If-Range`
    // with it, and a file still pending verification shows no ETag, so would come back whole.
    const inRanges =
      ranged && hint.ranges === true && sha256 !== undefined && hint.sha256 === sha256;
    const size = hint.size ?? 0;
    if (inRanges && size >= settings.threshold) {
      const done = await getRanged(
        source,
        hint,
        sha256!,
        part,
        destination,
        settings,
        policy,
      ).catch(async (err: unknown) => {
        if (known === undefined || !(err instanceof WholeAnswer)) throw err;
        await part.reset(); // What landed is not a prefix: the single stream starts over.
        return undefined;
      });
      if (done !== undefined) {
        const path = await place(part.path, done.path, output);
        placed = true;
        return { path, name: done.name, size };
      }
    }
    if (await forgetRanges(part.path)) await part.reset(); // Left by a ranged run: not a prefix.
    const done = await withRetry(policy, source.target, async () => {
      await part.sync();
      const res = await resume(source, part, sha256);
      const expected = expectedOf(res, source, hint);
      sha256 = expected.sha256;
      const range = res.statusCode === 206 ? contentRange(res) : undefined;
      const total = range ? range.total : contentLength(res);
      const { name } = expected;
      const { path, label } = await destination(name);
      await receive(res, part, total, path, label, expected);
      return { name, path };
    });
    const path = await place(part.path, done.path, output);
    placed = true;
    return { path, name: done.name, size: part.bytes };
  } finally {
    await (placed ? part.unlock() : part.remove());
  }
}

/** What a HEAD would say, when the caller knows the file's size and SHA-256 already. */
function knownHint(source: DownloadSource): Hint | undefined {
  if (source.sha256 === undefined || source.size === undefined) return undefined;
  return { sha256: source.sha256.toLowerCase(), size: source.size, ranges: true };
}

/** Downloads into `part` in parallel ranges (see `rangedDownload`); the file's name and path. */
async function getRanged(
  source: DownloadSource,
  hint: Hint,
  sha256: string,
  part: PartFile,
  destination: (name: string) => Promise<{ path: string; label: string }>,
  settings: ParallelSettings,
  policy: RetryPolicy,
): Promise<{ name: string; path: string }> {
  const expected = expectedFromHint(source, hint, sha256);
  const { path, label } = await destination(expected.name);
  const size = hint.size!;
  const partPath = part.path;
  await rangedDownload({
    source,
    partPath,
    size,
    sha256,
    settings,
    policy,
    label,
    corrupt: expected.against,
  });
  return { name: expected.name, path };
}

/**
 * GETs the bytes after those in `part` (all of them when it is empty). A 206 that does not carry
 * on from them is refused (and the part emptied) for a retry; a 200 or a 416 starts over.
 */
async function resume(
  source: DownloadSource,
  part: PartFile,
  sha256: string | undefined,
): Promise<IncomingMessage> {
  const headers = { ...source.headers };
  if (part.bytes > 0) {
    headers.range = `bytes=${part.bytes}-`;
    if (sha256 !== undefined) headers["if-range"] = `"${sha256}"`;
  }
  let res = await getFollowing(source.url, headers, true);
  if (res.statusCode === 416 && part.bytes > 0) {
    await readText(res); // Longer than the file: the part is not this file's start.
    await part.reset();
    res = await getFollowing(source.url, source.headers, true);
  }
  if (res.statusCode === 206 && part.bytes > 0) {
    const etag = etagSha256(res);
    const continues = contentRange(res)?.first === part.bytes;
    if (continues && (etag === undefined || etag === sha256)) return res;
    res.destroy();
    await part.reset();
    throw new RetryableStatusError(206, "the relay resumed the download at the wrong place", 0);
  }
  if (res.statusCode !== 200) throw await refusal(res, source);
  if (part.bytes > 0) await part.reset(); // The range was ignored: the whole file follows.
  return res;
}

async function refuseExisting(path: string): Promise<void> {
  if (await stat(path).catch(() => undefined)) {
    throw new CliError(`${path} already exists; name it with -o to overwrite it`);
  }
}

/**
 * Appends the response's bytes to `part` (for `path`, named `label` on the progress bar), then
 * checks that the whole file is `total` bytes with the expected SHA-256.
 */
async function receive(
  res: IncomingMessage,
  part: PartFile,
  total: number | undefined,
  path: string,
  label: string,
  expected: Expected,
): Promise<void> {
  const progress = new Progress(label, contentLength(res) ?? 0);
  try {
    const out = await open(part.path, "a").catch((err: unknown) => {
      throw fsError("write", path, err);
    });
    const take = (chunk: Buffer) => {
      part.take(chunk, total, expected.against);
      progress.advance(chunk.length);
    };
    try {
      await drain(res, out, null, take).catch((err: unknown) => {
        // A file-system error names the file; anything else not ours is the connection failing.
        if (err instanceof CliError) throw err;
        throw err instanceof SinkWriteError
          ? fsError("write", path, err.cause)
          : new NetworkError(err);
      });
    } finally {
      await out.close();
    }
  } finally {
    progress.finish();
  }
  const complete = total === undefined || part.bytes === total;
  if (!complete || part.sha256() !== expected.sha256) throw expected.against();
}

/** Gives the verified part file its name; returns the path it went to. */
async function place(temp: string, path: string, output: Output): Promise<string> {
  try {
    if (output.to !== "dir") await rename(temp, path);
    else return await keepTemp(temp, output.dir, basename(path), output.numbered);
    return path;
  } catch (err) {
    throw err instanceof CliError ? err : fsError("write", path, err);
  }
}
