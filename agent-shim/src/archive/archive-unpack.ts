import { createReadStream } from "node:fs";
import { chmod, link, lutimes, mkdir, open, symlink, utimes } from "node:fs/promises";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { CliError, errorCode, fsError, messageOf } from "../cli/errors.js";
import {
  Refusal,
  checkLinkTarget,
  directoryMode,
  inside,
  userUmask,
  quoted,
  relativeName,
} from "./extract-guards.js";
import { warn } from "../cli/output.js";
import { TarFormatError, type EntryType } from "./tar-format.js";
import type { ReadEntry } from "./tar-format.js";
import { TarReader } from "./tar-reader.js";
import type { ExtractLimits } from "./archive-limit.js";

export interface Unpacked {
  files: number;
  /** Every directory, by relative path: the modes and mtimes to give them once filled. */
  dirs: Map<string, { mode: number; mtime: number | undefined }>;
  /** Every symbolic link, by relative path, with its target. */
  links: { rel: string; target: string }[];
}

/**
 * Extracts every entry into `work`, a fresh empty directory, checking each as it comes. The
 * regular files' contents may add up to `limits.bytes` at most, and the archive may hold
 * `limits.entries` entries at most: an entry that would go over either is refused before
 * anything of it is written (the caller then removes `work`). Modes are clamped to the
 * user's umask, as any file the user makes would be.
 */
export async function unpack(
  archive: string,
  label: string,
  work: string,
  limits: ExtractLimits,
): Promise<Unpacked> {
  const maxBytes = limits.bytes;
  const umask = userUmask();
  let entries = 0;
  const kinds = new Map<string, EntryType>();
  const dirs = new Map<string, { mode: number; mtime: number | undefined }>();
  const links: { rel: string; target: string; mtime: number }[] = [];
  let files = 0;
  let bytes = 0;

  const handle = async (reader: TarReader, entry: ReadEntry) => {
    const refuse = (reason: string) => new Refusal(label, entry.name, reason);
    const rel = relativeName(entry.name, refuse);
    if (entry.type === "other") {
      const flag = quoted(entry.flag);
      warn(`skipped ${quoted(entry.name)} in ${label}: entries of type ${flag} are not extracted`);
      return reader.skip(entry.size);
    }
    if (rel === "") return reader.skip(entry.size); // "./" itself
    if (++entries > limits.entries) {
      throw refuse(
        `takes the archive over ${limits.entries} entries (raise it with --max-entries)`,
      );
    }
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
      dirs.set(rel, { mode: directoryMode(entry.mode, umask), mtime: entry.mtime });
      return reader.skip(entry.size);
    }
    if (entry.type === "symlink") {
      const target = entry.linkname;
      checkLinkTarget(target, refuse); // Clean parts: the target can be shown as it is.
      if (target === "" || isAbsolute(target)) {
        throw refuse(`links to an absolute path (${target})`);
      }
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
    bytes += entry.size;
    if (bytes > maxBytes) {
      throw new Refusal(
        label,
        entry.name,
        `takes the archive over ${maxBytes} bytes extracted (raise it with --max-bytes)`,
      );
    }
    const out = await open(path, "wx", 0o600); // Exclusive: never through an existing link.
    try {
      for await (const chunk of reader.content(entry.size)) await out.write(chunk);
    } finally {
      await out.close();
    }
    await chmod(path, entry.mode & 0o777 & ~umask);
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
