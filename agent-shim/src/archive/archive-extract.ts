import { chmod, lstat, mkdir, readdir, rename, rmdir, utimes } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { unpack } from "./archive-unpack.js";
import { CliError, errorCode, fsError } from "../cli/errors.js";
import { Refusal, directoryMode, resolveInside, userUmask } from "./extract-guards.js";
import type { ExtractLimits } from "./archive-limit.js";
import { numberedFileName, safeFileName } from "../download/file-names.js";
import { releaseTemp, tempPath } from "../upload/temp-files.js";

/** The directory name a `.tar.gz` (or `.tgz`) extracts to, or undefined for any other name. */
export function archiveStem(name: string): string | undefined {
  const match = /^(.*)\.(?:tar\.gz|tgz)$/i.exec(safeFileName(name, ""));
  return match?.[1] ? match[1] : undefined;
}

/** Where an archive went. */
export interface Extracted {
  path: string;
  files: number;
}

/**
 * Extracts a `.tar.gz` into a new directory `stem` in `dir` (`stem (1)` and so on when `numbered`
 * and the name is taken; an error otherwise). When everything in the archive is under one
 * top-level directory (as `airlock send <dir>` makes it), that directory's contents are what
 * `stem` gets. Entries that would escape are refused: absolute names, `..`, links whose target
 * leaves the tree, entries through a link, names that break the shared name rule, more than
 * `limits.bytes` of file content, more than `limits.entries` entries. Everything is first extracted into a temp dir in `dir` and only
 * renamed into place once all of it is there, so a refusal leaves nothing behind. `label` names
 * the archive in messages: it must be a clean name already.
 */
export async function extractArchive(
  archive: string,
  label: string,
  dir: string,
  stem: string,
  numbered: boolean,
  limits: ExtractLimits,
): Promise<Extracted> {
  dir = resolve(dir); // The checks compare absolute paths.
  await mkdir(dir, { recursive: true }).catch((err: unknown) => {
    throw fsError("create directory", dir, err);
  });
  if (!numbered && (await lstat(join(dir, stem)).catch(() => undefined))) {
    throw new CliError(`${join(dir, stem)} already exists; extract elsewhere with -o <dir>`);
  }
  const work = tempPath(dir, ".airlock-", ".extract");
  try {
    await mkdir(work, { mode: 0o700 }).catch((err: unknown) => {
      throw fsError("create directory", work, err);
    });
    const unpacked = await unpack(archive, label, work, limits);
    const tops = await readdir(work);
    const single = tops.length === 1 && unpacked.dirs.get(tops[0]!);
    const content = single ? join(work, tops[0]!) : work;
    const rootMeta = single ? unpacked.dirs.get(tops[0]!) : { mode: 0o755, mtime: undefined };
    // With every link in place, follow each the way the file system will (chains of links too):
    // none may leave what is placed, the top directory when it alone is (`../x` from in there
    // would point next to it, at whatever happens to be there).
    for (const { rel, target } of unpacked.links) {
      if ((await resolveInside(content, dirname(join(work, rel)), target, 0)) === undefined) {
        throw new Refusal(label, rel, `links outside the archive (${target})`);
      }
    }
    // Deepest first, so a read-only directory is closed only once its contents are in; the one
    // renamed into place last of all (moving a directory needs it writable).
    const ordered = [...unpacked.dirs].sort(
      ([a], [b]) => b.split("/").length - a.split("/").length,
    );
    for (const [rel, { mode, mtime }] of ordered) {
      if (single && rel === tops[0]) continue;
      await chmod(join(work, rel), mode);
      if (mtime !== undefined) await utimes(join(work, rel), mtime, mtime);
    }
    const path = await claimDir(content, dir, stem, numbered);
    await chmod(path, directoryMode(rootMeta!.mode, userUmask()));
    if (rootMeta!.mtime !== undefined) await utimes(path, rootMeta!.mtime, rootMeta!.mtime);
    return { path, files: unpacked.files };
  } finally {
    await releaseTemp(work);
  }
}

/** Renames `content` to a new directory `name` in `dir` without ever replacing one. */
async function claimDir(
  content: string,
  dir: string,
  name: string,
  numbered: boolean,
): Promise<string> {
  for (let n = 0; n <= (numbered ? 10_000 : 0); n++) {
    const path = join(dir, numberedFileName(name, n));
    try {
      await mkdir(path); // Claims the name: exclusive. The rename then replaces this empty dir.
    } catch (err) {
      if (errorCode(err) !== "EEXIST") throw fsError("create directory", path, err);
      if (!numbered) throw new CliError(`${path} already exists; extract elsewhere with -o <dir>`);
      continue;
    }
    try {
      await rename(content, path);
      return path;
    } catch (err) {
      await rmdir(path).catch(() => {});
      throw fsError("write", path, err);
    }
  }
  throw new CliError(`cannot extract ${name} in ${dir}: too many directories by that name`);
}
