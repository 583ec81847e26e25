import { spawn } from "node:child_process";
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { MULTIPART_THRESHOLD_BYTES } from "../../src/part-plan";
import { randomBytes as noMediaBytes } from "../support/bytes";
import { itLarge } from "../support/large";
import { relaySuite } from "../support/relay-suite";
import { SHIM, collectRun, failureLine, relayEnv, runShim, type ShimResult } from "./run-shim";
import { sentLine } from "./sent-line";
import { logText } from "./shim-inputs";

const MiB = 1024 * 1024;
const suite = relaySuite({}, "airlock-send-stdin-");

/** Deterministic pseudo-random chunks (an AES-CTR keystream), `total` bytes, never all held. */
function* randomChunks(total: number, seed: Buffer): Generator<Buffer> {
  const cipher = createCipheriv("aes-128-ctr", seed, Buffer.alloc(16));
  const zeros = Buffer.alloc(MiB);
  for (let sent = 0; sent < total;) {
    const take = Math.min(MiB, total - sent);
    sent += take;
    yield cipher.update(zeros.subarray(0, take));
  }
}

/**
 * Runs `airlock ...args` with `input` piped to its stdin (under /usr/bin/time, to read its peak
 * memory when asked).
 */
async function runWithStdin(
  args: string[],
  env: Record<string, string>,
  input: Iterable<Buffer> | Buffer,
  cwd: string,
): Promise<ShimResult & { maxRssKiB?: number }> {
  const child = spawn(
    "/usr/bin/time",
    ["-q", "-f", "maxrss-kib %M", process.execPath, SHIM, ...args],
    {
      cwd,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, ...env } as Record<
        string,
        string | undefined
      > as NodeJS.ProcessEnv,
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  const source = Buffer.isBuffer(input) ? Readable.from([input]) : Readable.from(input);
  source.pipe(child.stdin);
  child.stdin.on("error", () => {}); // the shim may stop reading when it refuses
  const result = await collectRun(child as never);
  const rssLine = result.stderrLines.find((line) => line.startsWith("maxrss-kib "));
  const stderrLines = result.stderrLines.filter((line) => line !== rssLine);
  return {
    ...result,
    stderrLines,
    stderr: stderrLines.map((line) => `${line}\n`).join(""),
    maxRssKiB: rssLine ? Number(rssLine.split(" ")[1]) : undefined,
  };
}

describe("airlock send - (standard input)", () => {
  const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

  async function session() {
    const { token } = await suite.relay.mintSession();
    const cwd = await mkdtemp(join(suite.dir, "work-"));
    return { env: relayEnv(suite.relay.url, token), cwd };
  }

  /** `airlock get <fileId>` writes the file; its SHA-256 must be `expected`. */
  async function expectGot(sent: SendResult, env: Record<string, string>, expected: string) {
    const cwd = await mkdtemp(join(suite.dir, "got-"));
    const got = await runShim(["get", sent.fileId], { cwd, env });
    expect(got.stderr, got.stderr).toBe("");
    expect(got.code).toBe(0);
    const written = await readFile(join(cwd, sent.name));
    expect(sha256(written)).toBe(expected);
  }

  it.each([
    ["a small log, in one request", logText(200_000)],
    ["a few MiB of log text, gzipped while streaming", logText(3 * MiB + 17)],
    ["a few MiB of random bytes, as they are", randomBytes(3 * MiB + 5)],
    ["nothing at all", Buffer.alloc(0)],
  ])("sends %s byte-exact under --name", async (_, bytes) => {
    const { env, cwd } = await session();
    const result = await runWithStdin(
      ["send", "-", "--name", "build.log", "--json"],
      env,
      bytes,
      cwd,
    );
    const sent = sentLine(result);
    expect(sent).toMatchObject({
      name: "build.log",
      size: bytes.length,
      sha256: sha256(bytes),
      deduped: false,
      status: "verified",
    });
    expect(sent.uploadedBytes).toBeGreaterThan(bytes.length > 0 ? 0 : -1);
    expect(sent.uploadedBytes).toBeLessThanOrEqual(Math.max(bytes.length, 64));
    await expectGot(sent, env, sha256(bytes));
  });

  itLarge(
    "streams 128 MiB of stdin in parts with flat memory, byte-exact (large)",
    { timeout: 300_000 },
    async () => {
      const { env, cwd } = await session();
      const total = MULTIPART_THRESHOLD_BYTES * 2 + 12_345; // 128 MiB and a bit: 17 parts
      const seed = randomBytes(16);
      const expected = createHash("sha256");
      for (const chunk of randomChunks(total, seed)) expected.update(chunk);
      const digest = expected.digest("hex");

      const result = await runWithStdin(
        ["send", "-", "--name", "dump.bin", "--json", "--wait"],
        env,
        randomChunks(total, seed),
        cwd,
      );
      const sent = sentLine(result);
      expect(sent).toMatchObject({ name: "dump.bin", size: total, sha256: digest });
      expect(sent.uploadedBytes).toBe(total);
      // Never held whole: holding it would take more than the input itself (plus Node's own
      // ~40 MiB); streamed, the peak stays well below (about 75-90 MiB were seen).
      expect(result.maxRssKiB).toBeDefined();
      expect(result.maxRssKiB! * 1024).toBeLessThan(total);
      await expectGot(sent, env, digest);
    },
  );

  const png = Buffer.concat([
    Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"),
    randomBytes(900),
  ]);
  it.each([
    ["a line of text", Buffer.from("hi\n"), "stdin.txt"],
    ["nothing at all", Buffer.alloc(0), "stdin.txt"],
    ["a PNG", png, "stdin.png"],
    ["bytes of no known type", Buffer.from(noMediaBytes(5000)), "stdin.bin"],
    ["a few MiB of log text, spooled", logText(2 * MiB), "stdin.txt"],
    [
      "a few MiB of bytes of no known type, spooled",
      Buffer.from(noMediaBytes(2 * MiB)),
      "stdin.bin",
    ],
  ])("names %s from - without --name by its type, byte-exact", async (_, bytes, name) => {
    const { env, cwd } = await session();
    const result = await runWithStdin(["send", "-", "--json"], env, bytes, cwd);
    const sent = sentLine(result);
    expect(sent).toMatchObject({ name, size: bytes.length, sha256: sha256(bytes) });
    await expectGot(sent, env, sha256(bytes));
  });

  it("refuses - twice as a usage error, sending nothing", async () => {
    const { env, cwd } = await session();
    const result = await runWithStdin(["send", "-", "-"], env, Buffer.from("hello"), cwd);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(failureLine(result)).toMatch(
      /^airlock: - \(standard input\) can be sent only once; usage: airlock send /,
    );
    const listed = await suite.api(env.AIRLOCK_TOKEN!, "GET", "/v1/files");
    expect(listed.body.files).toEqual([]);
  });

  it.each(["../up.txt", "a\u202etxt.exe", ".."])(
    "refuses --name %j as a usage error naming the rule",
    async (name) => {
      const { env, cwd } = await session();
      const result = await runWithStdin(["send", "-", "--name", name], env, Buffer.from("x"), cwd);
      expect(result.code).toBe(2);
      expect(failureLine(result)).toMatch(/^airlock: --name .* usage: /);
      const listed = await suite.api(env.AIRLOCK_TOKEN!, "GET", "/v1/files");
      expect(listed.body.files).toEqual([]);
    },
  );

  it("renames one file with --name and refuses --name with two paths", async () => {
    const { env, cwd } = await session();
    const bytes = randomBytes(5000);
    await writeFile(join(cwd, "out.bin"), bytes);
    await writeFile(join(cwd, "other.bin"), bytes);
    const renamed = sentLine(
      await runShim(["send", "out.bin", "--name", "renamed.bin", "--json"], { cwd, env }),
    );
    expect(renamed).toMatchObject({ name: "renamed.bin", sha256: sha256(bytes) });
    await expectGot(renamed, env, sha256(bytes));
    const two = await runShim(["send", "out.bin", "other.bin", "--name", "x.bin"], { cwd, env });
    expect(two.code).toBe(2);
    expect(failureLine(two)).toMatch(/^airlock: --name names one file/);
  });
});
