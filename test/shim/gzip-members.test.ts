// The gzip member format as both shims write it (issue 24 §1, issue 29 §2): independent 1 MiB
// members, their table, and the Node shim's worker threads (with their fallback).
import { execFileSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  MAX_MEMBERS,
  MEMBER_SPAN,
  declarableTable,
  memberSpanFor,
} from "../../agent-shim/src/upload/gzip-members";
import { MemberCompressor } from "../../agent-shim/src/upload/gzip-workers";
import { gzipToTemp } from "../../agent-shim/src/upload/prepare";
import { describeInMemory } from "../../agent-shim/src/upload/small-file";
import { spoolStdin } from "../../agent-shim/src/upload/stdin-spool";
import { MiB, expectMembers, pythonWriter, sha256 } from "./gzip-member-checks";
import { shimScratchDir } from "./scratch-dir";
import { logText } from "./shim-inputs";
import { PYTHON_SHIM } from "./shims";

const scratch = shimScratchDir("airlock-gzip-members-");

/** The Node shim's file writer on `original`: the stored bytes and what it declares. */
async function nodeFile(original: Buffer) {
  const path = join(scratch(), `node-${sha256(original).slice(0, 12)}.log`);
  await writeFile(path, original);
  const stored = await gzipToTemp(path, 1, new AbortController().signal);
  try {
    return { ...stored, bytes: await readFile(stored.path) };
  } finally {
    await stored.dispose();
  }
}

describe("gzip members, Node shim", () => {
  it("stores a 5.5 MiB text file as six independent 1 MiB members, declared in its table", async () => {
    const original = logText(5.5 * MiB);
    const stored = await nodeFile(original);
    expect(stored.encoding).toBe("gzip");
    expect(stored.members?.span).toBe(MEMBER_SPAN);
    expect(stored.storedSize).toBe(stored.bytes.length);
    expect(stored.storedSha256).toBe(sha256(stored.bytes));
    await expectMembers(stored.bytes, stored.members, original, scratch());
  });

  it.each([
    ["on libuv's pool (the default)", {}],
    ["on worker threads (AIRLOCK_GZIP_WORKERS=1)", { AIRLOCK_GZIP_WORKERS: "1" }],
  ])("writes an 18 MiB file the same way, compressed %s", async (_, vars) => {
    const saved = { ...process.env };
    Object.assign(process.env, { AIRLOCK_GZIP_THREADS: "2", ...vars });
    try {
      const original = logText(18 * MiB + 12345);
      const stored = await nodeFile(original);
      expect(stored.members?.storedSizes).toHaveLength(19);
      await expectMembers(stored.bytes, stored.members, original, scratch());
    } finally {
      process.env = saved;
    }
  });

  it("writes standard input as members as it streams in", async () => {
    const original = logText(20 * MiB + 7);
    const spooled = await spoolStdin(
      Readable.from([original.subarray(0, 3 * MiB), original.subarray(3 * MiB)]),
      1,
    );
    if (spooled.kind !== "disk") throw new Error("20 MiB of input is spooled to disk");
    try {
      expect(spooled.sha256).toBe(sha256(original));
      const bytes = await readFile(spooled.stored.path);
      expect(spooled.stored.storedSha256).toBe(sha256(bytes));
      await expectMembers(bytes, spooled.stored.members, original, scratch());
    } finally {
      await spooled.stored.dispose();
    }
  });

  it("gives a small file held in memory a one-member table in its declaration", async () => {
    const original = logText(600 * 1024);
    const small = describeInMemory(
      original,
      "small.log",
      { contentType: "text/plain", compressed: false },
      1,
    );
    expect(small.declaration.encoding).toBe("gzip");
    expect(small.declaration.members).toEqual({
      span: MEMBER_SPAN,
      storedSizes: [small.stored.length],
    });
    await expectMembers(small.stored, small.declaration.members, original, scratch());
  });

  it.each([
    ["works", true, undefined],
    ["cannot start", false, "throw new Error('no threads here')"],
    [
      "dies holding a member",
      false,
      "require('node:worker_threads').parentPort.on('message', () => process.exit(7))",
    ],
  ])(
    "on worker threads when asked to; when a worker %s, every member is still made (workers kept: %s)",
    async (_, kept, script) => {
      const original = logText(3 * MiB + 5);
      const compressor = new MemberCompressor(1, true, { workers: true, threads: 2, script });
      try {
        const spans = [0, 1, 2, 3].map((i) =>
          Buffer.from(original.subarray(i * MiB, (i + 1) * MiB)),
        );
        const members = await Promise.all(spans.map((span) => compressor.gzip(span)));
        expect(compressor.usingWorkers).toBe(kept);
        expect(Buffer.concat(members.map((m) => gunzipSync(m))).equals(original)).toBe(true);
      } finally {
        compressor.close();
      }
    },
  );
});

describe("gzip members, Python shim and parity", () => {
  it("writes the same member boundaries as the Node shim for the same file, in a pool or not", async () => {
    const original = logText(5.5 * MiB + 321);
    const node = await nodeFile(original);
    for (const threads of [1, 2]) {
      const python = await pythonWriter("file", original, scratch(), threads);
      expect(python.storedSha256).toBe(sha256(python.stored));
      expect(python.storedSize).toBe(python.stored.length);
      await expectMembers(python.stored, python.members, original, scratch());
      // Same level, same spans: the same members by what they cover. Their stored sizes are
      // what each zlib build makes of them, which may differ (Node bundles its own zlib).
      expect(python.members?.span).toBe(node.members?.span);
      expect(python.members?.storedSizes.length).toBe(node.members?.storedSizes.length);
    }
  });

  it("writes standard input past the pool threshold as members, and a small input as one", async () => {
    const long = logText(20 * MiB + 7);
    const spooled = await pythonWriter("stdin", long, scratch());
    expect(spooled.encoding).toBe("gzip");
    expect(spooled.storedSha256).toBe(sha256(spooled.stored));
    await expectMembers(spooled.stored, spooled.members, long, scratch());

    const small = logText(600 * 1024);
    const held = await pythonWriter("memory", small, scratch());
    expect(held.members).toEqual({ span: MEMBER_SPAN, storedSizes: [held.stored.length] });
    await expectMembers(held.stored, held.members, small, scratch());
  });

  it("picks the same span as the Node shim at every size, and no table past 10,000 members", () => {
    const sizes = [
      0,
      1,
      MiB,
      10_000 * MiB,
      10_000 * MiB + 1,
      25 * 1024 * MiB,
      40_000 * MiB,
      50 * 1024 * MiB,
    ];
    const script =
      "import importlib.util,json,sys\n" +
      "s=importlib.util.spec_from_file_location('a',sys.argv[1]);a=importlib.util.module_from_spec(s);s.loader.exec_module(a)\n" +
      "print(json.dumps([a.member_span_for(n) for n in json.loads(sys.argv[2])]))";
    const python = JSON.parse(
      execFileSync("python3", ["-c", script, PYTHON_SHIM, JSON.stringify(sizes)], {
        encoding: "utf8",
      }),
    ) as number[];
    expect(python).toEqual(sizes.map(memberSpanFor));
    for (const size of sizes) {
      const span = memberSpanFor(size);
      expect(span).toBeGreaterThanOrEqual(MiB);
      expect(span).toBeLessThanOrEqual(4 * MiB);
      const count = Math.max(1, Math.ceil(size / span));
      const table = declarableTable(span, new Array<number>(count).fill(1));
      expect(table === undefined).toBe(count > MAX_MEMBERS);
    }
    expect(memberSpanFor(10_000 * MiB)).toBe(MiB);
    expect(memberSpanFor(50 * 1024 * MiB)).toBe(4 * MiB);
  });
});
