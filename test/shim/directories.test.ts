import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { type RunningRelay } from "../support/relay";
import { sharedRelay } from "../support/shared-relay";
import { RUNTIMES, failureLine, prepareShim, runShim, type RunOptions, relayEnv } from "./run-shim";
import { LONG_NAME, UTF8_NAME, buildTree, listTree, rawTarGz, systemTar } from "./tar-trees";

// `airlock send <dir>` and `airlock get --extract` against the real relay (wrangler dev, r2).

let relay: RunningRelay;
let env: Record<string, string>;
let base: string;

beforeAll(async () => {
  prepareShim();
  relay = sharedRelay();
  const session = await relay.mintSession();
  env = relayEnv(relay.url, session.token);
  base = await mkdtemp(join(tmpdir(), "airlock-shim-dirs-"));
});

afterAll(async () => {
  await relay?.stop();
  if (base) await rm(base, { recursive: true, force: true });
});

const shim = (args: string[], cwd: string, options: RunOptions = {}) =>
  runShim(args, { cwd, env, ...options });

/** Sends one path with --json; returns the JSON line and stderr. */
async function sendJson(path: string, cwd: string, node?: string) {
  const result = await shim(["send", path, "--json"], cwd, { node });
  expect(result.code, result.stderr).toBe(0);
  const lines = result.stdout.trim().split("\n");
  expect(lines).toHaveLength(1);
  return { sent: JSON.parse(lines[0]!) as SendResult, stderr: result.stderr };
}

describe("airlock send <dir> (Node 20)", () => {
  let work: string;
  let tree: string;
  let sent: SendResult;

  beforeAll(async () => {
    work = await mkdtemp(join(base, "full-"));
    tree = await buildTree(work, "proj");
    await writeFile(join(work, "outside.txt"), "outside the tree: must not be archived\n");
    execFileSync("mkfifo", [join(tree, "a-fifo")]);
    const { sent: result, stderr } = await sendJson("proj/", work);
    sent = result;
    expect(stderr).toBe(`airlock: skipped proj/a-fifo: a FIFO cannot be archived\n`);
  });

  it("sends one <dir>.tar.gz and counts its regular files", () => {
    expect(sent).toMatchObject({ name: "proj.tar.gz", archive: true, files: 6, deduped: false });
    expect(sent.uploadedBytes).toBe(sent.size); // Already compressed: sent as it is.
  });

  it("makes a standard tar.gz: GNU tar lists it and extracts the same tree", async () => {
    const got = await mkdtemp(join(work, "got-"));
    const result = await shim(["get", sent.fileId, "-o", "proj.tar.gz"], got);
    expect(result.code, result.stderr).toBe(0);

    const listing = systemTar(["-tzvf", "proj.tar.gz"], got);
    const lines = listing.trim().split("\n");
    // Sorted by bytes, root first, directories before their contents; the FIFO is not there.
    expect(lines.map((line) => line.split(/\s+/).slice(5).join(" "))).toEqual([
      "proj/",
      "proj/README.md",
      "proj/empty/",
      "proj/link-out -> ../outside.txt",
      `proj/${LONG_NAME}`,
      "proj/run.sh",
      "proj/secret.txt",
      "proj/src/",
      "proj/src/deep/",
      "proj/src/deep/deeper/",
      "proj/src/deep/deeper/data.bin",
      "proj/src/deep-link -> deep",
      "proj/src/readme-link -> ../README.md",
      `proj/src/${UTF8_NAME}`,
    ]);
    expect(listing).toMatch(/^-rwxr-xr-x 0\/0 +\d+ \S+ \S+ proj\/run\.sh$/m);
    expect(listing).toMatch(/^-rw------- 0\/0 +\d+ \S+ \S+ proj\/secret\.txt$/m);
    expect(listing).toMatch(/^lrwxrwxrwx 0\/0 +0 \S+ \S+ proj\/link-out -> \.\.\/outside\.txt$/m);

    await mkdir(join(got, "x"));
    systemTar(["-xzf", "proj.tar.gz", "-C", "x"], got);
    const expected = await listTree(tree);
    delete expected["a-fifo"];
    expect(await listTree(join(got, "x", "proj"))).toEqual(expected);
  });

  it("refuses to --extract its own archive, whose link points outside the tree", async () => {
    const out = join(work, "refused");
    const result = await shim(["get", sent.fileId, "--extract", "-o", out], work);
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe(
      'airlock: refusing to extract proj.tar.gz: "proj/link-out" links outside the archive ' +
        "(../outside.txt); nothing was extracted",
    );
    expect(await readdir(out)).toEqual([]);
  });
});

describe.each(RUNTIMES)("send <dir> and get --extract under $name", ({ node }) => {
  it("round-trips the tree: contents, modes, mtimes, links; the same tree dedups", async () => {
    const work = await mkdtemp(join(base, "rt-"));
    const tree = await buildTree(work, "proj", true);
    const { sent, stderr } = await sendJson("proj", work, node);
    expect(stderr).toBe("");
    expect(sent).toMatchObject({ name: "proj.tar.gz", archive: true, files: 6, deduped: false });

    const result = await shim(["get", sent.fileId, "--extract", "-o", "out/"], work, { node });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${join(work, "out", "proj")}\n`);
    expect(await readdir(join(work, "out"))).toEqual(["proj"]); // No archive, no temp left.
    expect(await listTree(join(work, "out", "proj"))).toEqual(await listTree(tree));

    // Extracting again refuses to replace it.
    const again = await shim(["get", sent.fileId, "--extract", "-o", "out"], work, { node });
    expect(again.code).toBe(1);
    expect(failureLine(again)).toMatch(/out\/proj already exists/);

    // The archive is deterministic: the same tree is the same bytes, hence a dedup hit.
    const twice = await sendJson("proj", work, node);
    expect(twice.sent).toMatchObject({ sha256: sent.sha256, deduped: true, files: 6 });
  });
});

describe("get --extract of hostile archives from the real relay", () => {
  it.each([
    [
      "../evil",
      [
        { name: "h/ok.txt", body: "ok" },
        { name: "../../escaped-dotdot", body: "x" },
      ],
    ],
    [
      "/abs",
      [
        { name: "h/ok.txt", body: "ok" },
        { name: "/tmp/airlock-escaped-abs", body: "x" },
      ],
    ],
    [
      "a symlink to /etc, then a file through it",
      [
        { name: "h/etc", type: "2" as const, linkname: "/etc" },
        { name: "h/etc/airlock-escaped", body: "x" },
      ],
    ],
  ])("refuses %s: nothing written outside, nothing partial left", async (_label, entries) => {
    const work = await mkdtemp(join(base, "evil-"));
    await writeFile(join(work, "evil.tar.gz"), rawTarGz(entries));
    const { sent } = await sendJson("evil.tar.gz", work);
    const out = join(work, "a", "b", "out");
    const result = await shim(["get", sent.fileId, "--extract", "-o", out], work);
    expect(result.code).toBe(1);
    expect(failureLine(result)).toMatch(
      /^airlock: refusing to extract evil\.tar\.gz: ".+" .+; nothing was extracted$/,
    );
    expect(await readdir(out)).toEqual([]);
    expect(await readdir(join(work, "a", "b"))).toEqual(["out"]);
    expect(await readdir(work)).toEqual(["a", "evil.tar.gz"]);
    expect(existsSync("/tmp/airlock-escaped-abs")).toBe(false);
    expect(existsSync("/etc/airlock-escaped")).toBe(false);
  });
});
