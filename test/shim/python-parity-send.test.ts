// The Python shim's `send -` and `send --name` against the real relay (`wrangler dev`), held to
// the Node shim's lines, fields and exit codes.
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { failureLine } from "./run-shim";
import { sentLine } from "./sent-line";
import { logText, tempFilesIn } from "./shim-inputs";
import {
  download,
  MiB,
  node,
  python,
  run,
  sendStdinBoth,
  session,
  sha256,
  suite,
  THRESHOLD,
  useParitySuite,
} from "./python-parity-support";

useParitySuite("airlock-python-parity-");

describe("the Python shim's send -", () => {
  it.each([
    ["a small input", () => logText(20_000)],
    ["nothing at all", () => Buffer.alloc(0)],
  ])("sends %s byte-exact, as the Node shim does", async (_, make) => {
    const bytes = make();
    const { fromNode, fromPython } = await sendStdinBoth(bytes, "note.txt");
    for (const sent of [fromNode, fromPython]) {
      expect(sent).toMatchObject({
        name: "note.txt",
        size: bytes.length,
        sha256: sha256(bytes),
        status: "verified",
        deduped: false,
      });
    }
    expect(sha256(await download(fromPython.url))).toBe(sha256(bytes));
  });

  it.each([
    ["text", Buffer.from("hi\n"), "stdin.txt"],
    [
      "a PNG",
      Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), randomBytes(500)]),
      "stdin.png",
    ],
    ["bytes of no known type", Buffer.concat([Buffer.alloc(1), randomBytes(500)]), "stdin.bin"],
    ["a few MiB of text, spooled", logText(2 * MiB), "stdin.txt"],
  ])(
    "names %s sent as - without --name by its type, as the Node shim does",
    async (_, bytes, name) => {
      for (const driver of [node, python]) {
        const sent = sentLine(await run(driver, ["send", "-", "--json"], await session(), bytes));
        expect(sent, driver.name).toMatchObject({
          name,
          size: bytes.length,
          sha256: sha256(bytes),
        });
      }
    },
  );

  it("gzips a few MiB of text while streaming it, byte-exact", async () => {
    const at = await session();
    const bytes = logText(3 * MiB + 17);
    const sent = sentLine(
      await run(python, ["send", "-", "--name", "build.log", "--json"], at, bytes),
    );
    expect(await tempFilesIn(at.cwd)).toEqual([]);
    expect(sent).toMatchObject({ name: "build.log", size: bytes.length, sha256: sha256(bytes) });
    // Stored gzipped: far fewer bytes went up than were read.
    expect(sent.uploadedBytes).toBeGreaterThan(0);
    expect(sent.uploadedBytes).toBeLessThan(bytes.length / 3);
    expect(sha256(await download(sent.url))).toBe(sha256(bytes));
  });

  it(
    "sends random bytes over the multipart threshold byte-exact",
    { timeout: 300_000 },
    async () => {
      // The threshold the shim is given (24 MiB; 64 MiB by default) keeps the bytes few.
      const at = await session();
      at.env = { ...at.env, AIRLOCK_MULTIPART_THRESHOLD: String(THRESHOLD) };
      const bytes = randomBytes(THRESHOLD + 12_345);
      const result = await run(
        python,
        ["send", "-", "--name", "dump.bin", "--json", "--wait"],
        at,
        bytes,
      );
      const sent = sentLine(result);
      expect(sent).toMatchObject({
        name: "dump.bin",
        size: bytes.length,
        sha256: sha256(bytes),
        status: "verified",
        uploadedBytes: bytes.length,
      });
      expect(sha256(await download(sent.url))).toBe(sha256(bytes));
      expect(await tempFilesIn(at.cwd)).toEqual([]);
    },
  );

  it("renames one file with --name, as the Node shim does", async () => {
    const bytes = randomBytes(5000);
    const sent: SendResult[] = [];
    for (const driver of [node, python]) {
      const at = await session();
      await writeFile(join(at.cwd, "out.bin"), bytes);
      sent.push(
        sentLine(await run(driver, ["send", "out.bin", "--name", "renamed.bin", "--json"], at)),
      );
    }
    expect(Object.keys(sent[1]!)).toEqual(Object.keys(sent[0]!));
    for (const one of sent)
      expect(one).toMatchObject({ name: "renamed.bin", sha256: sha256(bytes) });
    expect(sha256(await download(sent[1]!.url))).toBe(sha256(bytes));
  });

  it.each([
    [["send", "-", "-"], /^airlock: - \(standard input\) can be sent only once; usage: /],
    [
      ["send", "a.bin", "b.bin", "--name", "x.bin"],
      /^airlock: --name names one file; give one path or -; usage: /,
    ],
    [["send", "-", "--name", "../up.txt"], /^airlock: --name "\.\.\/up\.txt" must not contain/],
    [["send", "-", "--name", ".."], /^airlock: --name "\.\." must not be "\." or "\.\."; usage: /],
    [
      ["send", "a.bin", "--max-downloads", "2.5"],
      /^airlock: --max-downloads must be a whole number/,
    ],
    [["send", "a.bin", "--expires", "soon"], /^airlock: --expires soon is not a duration/],
  ])("refuses %j with the Node shim's line and exit 2, sending nothing", async (args, line) => {
    const stderr: string[] = [];
    for (const driver of [node, python]) {
      const at = await session();
      for (const name of ["a.bin", "b.bin"]) await writeFile(join(at.cwd, name), randomBytes(100));
      const result = await run(driver, args, at, Buffer.from("hello"));
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      stderr.push(failureLine(result));
      expect((await suite.api(at.token, "GET", "/v1/files")).body.files).toEqual([]);
    }
    expect(stderr[0]).toMatch(line);
    expect(stderr[1]).toBe(stderr[0]);
  });
});
