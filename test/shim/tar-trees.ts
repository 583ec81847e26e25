import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  chmod,
  lstat,
  mkdir,
  readFile,
  readdir,
  readlink,
  symlink,
  utimes,
  writeFile,
} from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** A name of exactly 200 bytes: too long for a ustar name field, so it needs a pax header. */
export const LONG_NAME = `${"long-name-".repeat(19)}0123456.txt`;
/** A UTF-8 name: a pax header again (ustar names are ASCII). */
export const UTF8_NAME = "résumé ✓ 名前.txt";

/** What a tree holds, by relative path: type, permission bits, content hash or link target. */
export type TreeListing = Record<string, string>;

/**
 * Builds the test tree `<parent>/<name>/`: nested dirs, a UTF-8 name, a 200-byte name, an
 * executable, a read-only file, an empty dir, a symlink inside the tree and (unless `inOnly`)
 * one pointing outside it. Returns the tree's path.
 */
export async function buildTree(parent: string, name: string, inOnly = false): Promise<string> {
  const root = join(parent, name);
  await mkdir(join(root, "src", "deep", "deeper"), { recursive: true });
  await mkdir(join(root, "empty"), { recursive: true });
  await writeFile(join(root, "README.md"), `# ${name}\n`);
  await writeFile(join(root, "src", "deep", "deeper", "data.bin"), randomBytes(300_000));
  await writeFile(join(root, "src", UTF8_NAME), "unicode\n");
  await writeFile(join(root, LONG_NAME), "long\n");
  await writeFile(join(root, "run.sh"), "#!/bin/sh\necho hi\n");
  await chmod(join(root, "run.sh"), 0o755);
  await writeFile(join(root, "secret.txt"), "mine\n");
  await chmod(join(root, "secret.txt"), 0o600);
  await symlink("../README.md", join(root, "src", "readme-link"));
  await symlink("deep", join(root, "src", "deep-link")); // To a directory: stored, not followed.
  if (!inOnly) await symlink("../outside.txt", join(root, "link-out"));
  // Fixed, distinct mtimes (whole seconds: tar keeps seconds).
  let t = 1_700_000_000;
  for (const rel of ["README.md", "run.sh", "secret.txt", LONG_NAME, `src/${UTF8_NAME}`]) {
    await utimes(join(root, rel), t, t);
    t += 3600;
  }
  for (const rel of ["src/deep/deeper", "src/deep", "src", "empty"]) {
    await utimes(join(root, rel), t, t);
    t += 60;
  }
  return root;
}

/** Every entry under `root` (not `root` itself): `type mode content-or-target mtime`. */
export async function listTree(root: string, withDirMtimes = true): Promise<TreeListing> {
  const out: TreeListing = {};
  async function walk(dir: string, prefix: string): Promise<void> {
    for (const name of (await readdir(dir)).sort()) {
      const path = join(dir, name);
      const rel = prefix ? `${prefix}/${name}` : name;
      const info = await lstat(path);
      const mode = (info.mode & 0o7777).toString(8);
      const mtime = Math.floor(info.mtimeMs / 1000);
      if (info.isSymbolicLink()) out[rel] = `symlink -> ${await readlink(path)}`;
      else if (info.isFile()) out[rel] = `file ${mode} ${sha256(await readFile(path))} ${mtime}`;
      else if (info.isDirectory()) {
        out[rel] = `dir ${mode}${withDirMtimes ? ` ${mtime}` : ""}`;
        await walk(path, rel);
      } else out[rel] = "special";
    }
  }
  await walk(root, "");
  return out;
}

/** One entry of a hand-made tar: a regular file unless `type` says otherwise. */
export interface RawEntry {
  name: string;
  type?: "0" | "1" | "2" | "5";
  body?: string;
  linkname?: string;
  mode?: number;
}

/**
 * A `.tar.gz` written header by header, independently of the shim's writer, so that it can hold
 * what no well-behaved tar would write: `..`, absolute names, links out.
 */
export function rawTarGz(entries: RawEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const body = Buffer.from(entry.body ?? "");
    const header = Buffer.alloc(512);
    header.write(entry.name, 0, 100, "utf8");
    header.write(`${(entry.mode ?? 0o644).toString(8).padStart(7, "0")}\0`, 100, "latin1");
    header.write("0000000\0", 108, "latin1");
    header.write("0000000\0", 116, "latin1");
    header.write(`${body.length.toString(8).padStart(11, "0")}\0`, 124, "latin1");
    header.write(`${(1_700_000_000).toString(8).padStart(11, "0")}\0`, 136, "latin1");
    header.write("        ", 148, "latin1");
    header.write(entry.type ?? "0", 156, "latin1");
    header.write(entry.linkname ?? "", 157, 100, "utf8");
    header.write("ustar\u000000", 257, "latin1");
    const sum = header.reduce((total, byte) => total + byte, 0);
    header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "latin1");
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

/** Runs the system's GNU tar and returns its stdout. */
export function systemTar(args: string[], cwd?: string): string {
  return execFileSync("tar", args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, LC_ALL: "C.UTF-8" },
  });
}
