/**
 * The checks that keep an extracted archive inside its directory: safe entry names, and links
 * whose targets (followed link by link) stay in the tree.
 */
import { lstat, readlink } from "node:fs/promises";
import { dirname, isAbsolute, join, sep } from "node:path";
import { fileNameProblem, writtenOut } from "../../../src/names.js";
import { CliError } from "../cli/errors.js";

/** A refused entry: the message says which and why. */
export class Refusal extends CliError {
  constructor(label: string, entry: string, reason: string) {
    super(`refusing to extract ${label}: ${quoted(entry)} ${reason}; nothing was extracted`);
  }
}

/**
 * A name from an archive, quoted for a one-line message: cut to 200 characters, JSON escapes,
 * and the C1, line separator and bidi characters JSON leaves as they are escaped too.
 */
export function quoted(name: string): string {
  const shown = name.length > 200 ? `${name.slice(0, 200)}…` : name;
  return writtenOut(JSON.stringify(shown));
}

/**
 * An entry's name as a safe relative path: never absolute, never `..`; "" for the root. Every
 * component must already obey the shared name rule (no control, bidi or invisible characters,
 * no `\`, no leading or trailing space, at most 255 bytes): archive entries are refused, not
 * cleaned, since a cleaned name could collide with another entry or break a link that names it.
 */
export function relativeName(name: string, refuse: (reason: string) => Error): string {
  if (name.startsWith("/")) throw refuse("is an absolute path");
  if (name.includes("\u0000")) throw refuse("has a NUL in its name");
  const parts = name.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.includes("..")) throw refuse("has a .. component");
  for (const part of parts) {
    const problem = fileNameProblem(part);
    if (problem !== null) throw refuse(`is not a clean name: each part ${problem}`);
  }
  return parts.join("/");
}

/** A symbolic link's target: each named component obeys the name rule, like entry names. */
export function checkLinkTarget(target: string, refuse: (reason: string) => Error): void {
  for (const part of target.split("/")) {
    if (part === "" || part === "." || part === "..") continue;
    const problem = fileNameProblem(part);
    if (problem !== null) throw refuse(`links to a target that is not clean: each part ${problem}`);
  }
}

/**
 * A directory's mode as extracted: permission bits only, clamped to `umask` (0777 in the
 * archive is 0755 under umask 022), always rwx for its owner.
 */
export function directoryMode(mode: number, umask: number): number {
  return (mode & 0o777 & ~umask) | 0o700;
}

/**
 * The process's umask (reading it without setting it is deprecated in the docs only, for the
 * race that setting it to read it would open between threads).
 */
export function userUmask(): number {
  return process.umask();
}

export function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(root + sep);
}

/**
 * Where `target`, read from directory `from`, ends up when every link on the way is followed,
 * or undefined when any step leaves `root` (or the chain is too long).
 */
export async function resolveInside(
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
