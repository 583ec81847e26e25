/**
 * The checks that keep an extracted archive inside its directory: safe entry names, and links
 * whose targets (followed link by link) stay in the tree.
 */
import { lstat, readlink } from "node:fs/promises";
import { dirname, isAbsolute, join, sep } from "node:path";
import { CliError } from "./errors.js";

/** A refused entry: the message says which and why. */
export class Refusal extends CliError {
  constructor(label: string, entry: string, reason: string) {
    super(
      `refusing to extract ${label}: ${JSON.stringify(entry)} ${reason}; nothing was extracted`,
    );
  }
}

/** An entry's name as a safe relative path: never absolute, never `..`; "" for the root. */
export function relativeName(name: string, refuse: (reason: string) => Error): string {
  if (name.startsWith("/")) throw refuse("is an absolute path");
  if (name.includes("\u0000")) throw refuse("has a NUL in its name");
  const parts = name.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.includes("..")) throw refuse("has a .. component");
  return parts.join("/");
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
