import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { expect } from "vitest";
import type { MemberTable } from "../../agent-shim/src/upload/gzip-members";
import { PYTHON_SHIM } from "./shims";

export const MiB = 1024 * 1024;
export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/**
 * Holds stored gzip bytes to the member format: the table sums to the stored size and lists
 * one member per span of the original; each member, cut out at its stored offset, inflates on
 * its own to exactly its span (a cut inside a member fails to inflate; a slice holding more
 * than one member inflates to more); the whole is a valid multi-member gzip for `gzip -t` and
 * for Python's `gzip.decompress`, which give back the original. `dir` takes a copy for them.
 */
export async function expectMembers(
  stored: Buffer,
  table: MemberTable | undefined,
  original: Buffer,
  dir: string,
): Promise<void> {
  expect(table).toBeDefined();
  const { span, storedSizes } = table!;
  expect(storedSizes.reduce((sum, n) => sum + n, 0)).toBe(stored.length);
  expect(storedSizes).toHaveLength(Math.max(1, Math.ceil(original.length / span)));
  let offset = 0;
  storedSizes.forEach((storedSize, i) => {
    expect(storedSize).toBeGreaterThan(0);
    const member = stored.subarray(offset, offset + storedSize);
    const inflated = gunzipSync(member);
    expect(inflated.equals(original.subarray(i * span, (i + 1) * span)), `member ${i}`).toBe(true);
    offset += storedSize;
  });
  const path = join(dir, `members-${sha256(stored).slice(0, 12)}.gz`);
  await writeFile(path, stored);
  execFileSync("gzip", ["-t", path]);
  const script =
    "import gzip,hashlib,sys;print(hashlib.sha256(gzip.decompress(open(sys.argv[1],'rb').read())).hexdigest())";
  const inflated = execFileSync("python3", ["-c", script, path], { encoding: "utf8" }).trim();
  expect(inflated).toBe(sha256(original));
}

/** What the Python shim's writer gave: its stored bytes, and its declaration fields. */
export interface PythonStored {
  stored: Buffer;
  members: MemberTable | undefined;
  storedSize: number;
  storedSha256: string;
  encoding?: string;
}

/**
 * Runs one of the Python shim's gzip writers on `original` (loading airlock.py as a module):
 * `file` (gzip_to_temp, optionally with `threads`), `stdin` (spool_stdin, the bytes on its
 * standard input) or `memory` (describe_in_memory).
 */
export async function pythonWriter(
  kind: "file" | "stdin" | "memory",
  original: Buffer,
  dir: string,
  threads?: number,
): Promise<PythonStored> {
  const tag = sha256(original).slice(0, 12);
  const source = join(dir, `py-source-${tag}`);
  const out = join(dir, `py-stored-${tag}-${kind}`);
  await writeFile(source, original);
  const script = `
import importlib.util, json, shutil, sys, threading
spec = importlib.util.spec_from_file_location("airlock", sys.argv[1])
a = importlib.util.module_from_spec(spec)
spec.loader.exec_module(a)
kind, source, out = sys.argv[2], sys.argv[3], sys.argv[4]
threads = int(sys.argv[5]) if len(sys.argv) > 5 else None
if kind == "file":
    s = a.gzip_to_temp(source, 1, None, threading.Event(), threads)
    shutil.copyfile(s.path, out)
    s.dispose()
    print(json.dumps({"members": s.members, "storedSize": s.size, "storedSha256": s.sha256}))
elif kind == "stdin":
    d, s = a.spool_stdin("stdin.log", 1)
    shutil.copyfile(s.path, out)
    s.dispose()
    print(json.dumps(dict(d, members=s.members)))
else:
    d, data = a.describe_in_memory(open(source, "rb").read(), "small.log", 1)
    open(out, "wb").write(data)
    print(json.dumps(d))
`;
  const args = ["-c", script, PYTHON_SHIM, kind, source, out];
  if (threads !== undefined) args.push(String(threads));
  const input = kind === "stdin" ? original : undefined;
  const answer = JSON.parse(
    execFileSync("python3", args, { input, encoding: "utf8", maxBuffer: 16 * MiB }),
  ) as Omit<PythonStored, "stored">;
  return { ...answer, members: answer.members ?? undefined, stored: await readFile(out) };
}
