import { createReadStream, createWriteStream, type Stats } from "node:fs";
import {
  chmod,
  link,
  lstat,
  lutimes,
  mkdir,
  open,
  readdir,
  readlink,
  rename,
  rmdir,
  stat,
  symlink,
  utimes,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import { DigestStream } from "./digest.js";
import { CliError, errorCode, fsError, messageOf } from "./errors.js";
import { numberedFileName, safeFileName } from "./file-names.js";
import { warn } from "./output.js";
import { changedWhileSending, type StoredBytes } from "./prepare.js";
import {
  END_OF_ARCHIVE,
  TarFormatError,
  TarReader,
  encodeHeader,
  padding,
  type EntryType,
  type ReadEntry,
} from "./tar.js";
import { releaseTemp, tempPath } from "./temp-files.js";

/** The content type of a `.tar.gz`. */
export const ARCHIVE_TYPE = "application/gzip";

/** A directory packed into a `.tar.gz` temp file, ready to upload as it is. */
export interface Archive extends StoredBytes {
  /** `<dir>.tar.gz`. */
  name: string;
  /** Regular files in it. */
  files: number;
}

/**
 * Packs a directory into `<dir>.tar.gz` in the OS temp directory, streaming: the tree is walked
 * in sorted order and each file's bytes flow through the tar writer and gzip straight to disk.
 * Entries are named `<dir>/...`; regular files, directories and symlinks (stored as links, never
 * followed) keep their permission bits and mtimes; owners are not kept; anything else (sockets,
 * FIFOs, devices) is skipped with a warning. The same tree always makes the same bytes.
 */
export async function archiveDirectory(dir: string, level: number): Promise<Archive> {
  const top = safeFileName(basename(resolve(dir)), "archive");
  const temp = tempPath(tmpdir(), "airlock-", ".tar.gz");
  const digest = new DigestStream();
  const count = { files: 0 };
  try {
    const out = createWriteStream(temp, { flags: "wx", mode: 0o600 });
    const tar = Readable.from(tarStream(dir, top, count), { objectMode: false });
    await pipeline(tar, createGzip({ level }), digest, out).catch((err: unknown) => {
      throw err instanceof CliError ? err : fsError("write temp file", temp, err);
    });
  } catch (err) {
    await releaseTemp(temp);
    throw err;
  }
  return {
    name: `${top}.tar.gz`,
    files: count.files,
    encoding: "identity",
    path: temp,
    storedSize: digest.bytes,
    storedSha256: digest.hex(),
    dispose: () => releaseTemp(temp),
  };
}

async function* tarStream(
  dir: string,
  top: string,
  count: { files: number },
): AsyncGenerator<Buffer> {
  const info = await stat(dir).catch((err: unknown) => {
    throw fsError("read", dir, err);
  });
  yield encodeHeader({ ...meta(info), name: top, type: "directory" });
  yield* walk(dir, top, count);
  yield END_OF_ARCHIVE;
}

function meta(info: Stats) {
  return {
    mode: info.mode & 0o7777,
    mtime: Math.floor(info.mtimeMs / 1000),
    size: 0,
    linkname: "",
  };
}

/** Byte order of the UTF-8 names, as `LC_ALL=C sort` has it. */
function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

async function* walk(
  dir: string,
  prefix: string,
  count: { files: number },
): AsyncGenerator<Buffer> {
  const names = await readdir(dir).catch((err: unknown) => {
    throw fsError("read", dir, err);
  });
  for (const name of names.sort(byBytes)) {
    const path = join(dir, name);
    const entryName = `${prefix}/${name}`;
    const info = await lstat(path).catch((err: unknown) => {
      throw fsError("read", path, err);
    });
    if (info.isDirectory()) {
      yield encodeHeader({ ...meta(info), name: entryName, type: "directory" });
      yield* walk(path, entryName, count);
    } else if (info.isSymbolicLink()) {
      const target = await readlink(path).catch((err: unknown) => {
        throw fsError("read", path, err);
      });
      yield encodeHeader({ ...meta(info), name: entryName, type: "symlink", linkname: target });
    } else if (info.isFile()) {
      yield encodeHeader({ ...meta(info), name: entryName, type: "file", size: info.size });
      yield* fileBytes(path, info.size);
      yield padding(info.size);
      count.files++;
    } else {
      warn(`skipped ${path}: ${kindOf(info)} cannot be archived`);
    }
  }
}

function kindOf(info: Stats): string {
  if (info.isSocket()) return "a socket";
  if (info.isFIFO()) return "a FIFO";
  if (info.isBlockDevice() || info.isCharacterDevice()) return "a device";
  return "a special file";
}

/** Exactly `size` bytes of the file, as its header promised; a file that shrank is an error. */
async function* fileBytes(path: string, size: number): AsyncGenerator<Buffer> {
  if (size === 0) return;
  let sent = 0;
  const input = createReadStream(path, { start: 0, end: size - 1 });
  try {
    for await (const chunk of input) {
      sent += (chunk as Buffer).length;
      yield chunk as Buffer;
    }
  } catch (err) {
    throw fsError("read", path, err);
  } finally {
    input.destroy();
  }
  if (sent !== size) throw changedWhileSending(path);
}

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
 * leaves the tree, entries through a link. Everything is first extracted into a temp dir in `dir`
 * and only renamed into place once all of it is there, so a refusal leaves nothing behind.
 */
export async function extractArchive(
  archive: string,
  label: string,
  dir: string,
  stem: string,
  numbered: boolean,
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
    const unpacked = await unpack(archive, label, work);
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
    await chmod(path, rootMeta!.mode);
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

/** A refused entry: the message says which and why. */
class Refusal extends CliError {
  constructor(label: string, entry: string, reason: string) {
    super(
      `refusing to extract ${label}: ${JSON.stringify(entry)} ${reason}; nothing was extracted`,
    );
  }
}

interface Unpacked {
  files: number;
  /** Every directory, by relative path: the modes and mtimes to give them once filled. */
  dirs: Map<string, { mode: number; mtime: number | undefined }>;
  /** Every symbolic link, by relative path, with its target. */
  links: { rel: string; target: string }[];
}

/** Extracts every entry into `work`, a fresh empty directory, checking each as it comes. */
async function unpack(archive: string, label: string, work: string): Promise<Unpacked> {
  const kinds = new Map<string, EntryType>();
  const dirs = new Map<string, { mode: number; mtime: number | undefined }>();
  const links: { rel: string; target: string; mtime: number }[] = [];
  let files = 0;

  const handle = async (reader: TarReader, entry: ReadEntry) => {
    const refuse = (reason: string) => new Refusal(label, entry.name, reason);
    const rel = relativeName(entry.name, refuse);
    if (entry.type === "other") {
      warn(`skipped ${entry.name} in ${label}: entries of type ${entry.flag} are not extracted`);
      return reader.skip(entry.size);
    }
    if (rel === "") return reader.skip(entry.size); // "./" itself
    const parts = rel.split("/");
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join("/");
      const kind = kinds.get(parent);
      if (kind === "symlink") throw refuse(`goes through the symbolic link ${parent}`);
      if (kind !== undefined && kind !== "directory")
        throw refuse(`goes through the file ${parent}`);
      if (kind === undefined) {
        kinds.set(parent, "directory");
        dirs.set(parent, { mode: 0o755, mtime: undefined });
      }
    }
    const existing = kinds.get(rel);
    if (existing !== undefined && !(existing === "directory" && entry.type === "directory")) {
      throw refuse("appears twice in the archive");
    }
    kinds.set(rel, entry.type);
    const path = join(work, rel);
    await mkdir(dirname(path), { recursive: true });

    if (entry.type === "directory") {
      await mkdir(path, { recursive: true });
      dirs.set(rel, { mode: entry.mode & 0o777, mtime: entry.mtime });
      return reader.skip(entry.size);
    }
    if (entry.type === "symlink") {
      const target = entry.linkname;
      if (target === "" || isAbsolute(target))
        throw refuse(`links to an absolute path (${target})`);
      if (!inside(work, resolve(dirname(path), target))) {
        throw refuse(`links outside the archive (${target})`);
      }
      links.push({ rel, target, mtime: entry.mtime }); // Made last, once nothing can go through them.
      return;
    }
    if (entry.type === "hardlink") {
      const targetRel = relativeName(entry.linkname, (reason) =>
        refuse(`is a hard link whose target ${reason}`),
      );
      if (kinds.get(targetRel) !== "file") {
        throw refuse(`is a hard link to ${targetRel}, not a regular file earlier in the archive`);
      }
      await link(join(work, targetRel), path);
      files++;
      return;
    }
    const out = await open(path, "wx", 0o600); // Exclusive: never through an existing link.
    try {
      for await (const chunk of reader.content(entry.size)) await out.write(chunk);
    } finally {
      await out.close();
    }
    await chmod(path, entry.mode & 0o777);
    await utimes(path, entry.mtime, entry.mtime);
    files++;
  };

  await pipeline(
    createReadStream(archive),
    createGunzip(),
    async (chunks: AsyncIterable<Buffer>) => {
      const reader = new TarReader(chunks);
      for (let entry = await reader.next(); entry; entry = await reader.next()) {
        await handle(reader, entry);
      }
    },
  ).catch((err: unknown) => {
    if (err instanceof CliError) throw err;
    if (err instanceof TarFormatError || errorCode(err)?.startsWith("Z_")) {
      throw new CliError(`cannot extract ${label}: ${messageOf(err)}`);
    }
    throw fsError("extract", label, err);
  });

  for (const { rel, target, mtime } of links) {
    const path = join(work, rel);
    await symlink(target, path);
    await lutimes(path, mtime, mtime);
  }
  return { files, dirs, links: links.map(({ rel, target }) => ({ rel, target })) };
}

/** An entry's name as a safe relative path: never absolute, never `..`; "" for the root. */
function relativeName(name: string, refuse: (reason: string) => Error): string {
  if (name.startsWith("/")) throw refuse("is an absolute path");
  if (name.includes("\u0000")) throw refuse("has a NUL in its name");
  const parts = name.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.includes("..")) throw refuse("has a .. component");
  return parts.join("/");
}

function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(root + sep);
}

/**
 * Where `target`, read from directory `from`, ends up when every link on the way is followed,
 * or undefined when any step leaves `root` (or the chain is too long).
 */
async function resolveInside(
  root: string,
  from: string,
  target: string,
  depth: number,
): Promise<string | undefined> {
  if (depth > 40 || isAbsolute(target)) return undefined;
  let current = from;
  for (const part of target.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      current = dirname(current);
      if (!inside(root, current)) return undefined;
      continue;
    }
    const next = join(current, part);
    const info = await lstat(next).catch(() => undefined);
    if (info?.isSymbolicLink()) {
      const resolved = await resolveInside(root, current, await readlink(next), depth + 1);
      if (resolved === undefined) return undefined;
      current = resolved;
    } else {
      current = next;
    }
  }
  return current;
}
