import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { MIN_PART_BYTES } from "../../src/part-plan";
import { relaySuite } from "../support/relay-suite";
import { SHIM, failureLine, relayEnv, runShim } from "./run-shim";
import { sentLine } from "./sent-line";
import { startHoldingProxy } from "./holding-proxy";

const MiB = 1024 * 1024;
const suite = relaySuite({}, "airlock-send-options-");
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** A session, a work directory and a cache directory of its own. */
async function session() {
  const { token } = await suite.relay.mintSession();
  const cwd = await mkdtemp(join(suite.dir, "work-"));
  const env = { ...relayEnv(suite.relay.url, token), XDG_CACHE_HOME: join(cwd, ".cache") };
  return { token, cwd, env };
}

/** Seconds from now until an ISO time. */
const secondsUntil = (iso: string) => (Date.parse(iso) - Date.now()) / 1000;

describe("airlock send --expires / --max-downloads", () => {
  it("prints a link that stops after --max-downloads and reports both expiries in --json", async () => {
    const { cwd, env } = await session();
    const bytes = randomBytes(40_000);
    await writeFile(join(cwd, "one.bin"), bytes);
    const sent = sentLine(
      await runShim(["send", "one.bin", "--expires", "2h", "--max-downloads", "1", "--json"], {
        cwd,
        env,
      }),
    );
    expect(sent.sha256).toBe(sha256(bytes));
    // The link lives two hours; the file the relay's FILE_TTL_SECONDS (7 days by default).
    expect(secondsUntil(sent.expiresAt)).toBeGreaterThan(2 * 3600 - 300);
    expect(secondsUntil(sent.expiresAt)).toBeLessThanOrEqual(2 * 3600);
    expect(secondsUntil(sent.fileExpiresAt)).toBeGreaterThan(6 * 86400);
    const first = await fetch(sent.url);
    expect(first.status).toBe(200);
    expect(sha256(Buffer.from(await first.arrayBuffer()))).toBe(sha256(bytes));
    const second = await fetch(sent.url);
    expect(second.status).toBe(410);
    expect(((await second.json()) as { error: { code: string } }).error.code).toBe(
      "link_exhausted",
    );
  });

  it("without options reports the default link's expiry apart from the file's", async () => {
    const { cwd, env } = await session();
    await writeFile(join(cwd, "two.bin"), randomBytes(2 * MiB));
    const sent = sentLine(await runShim(["send", "two.bin", "--json"], { cwd, env }));
    // LINK_TTL_SECONDS (a day) and FILE_TTL_SECONDS (7 days), the relay's defaults.
    expect(secondsUntil(sent.expiresAt)).toBeGreaterThan(86400 - 300);
    expect(secondsUntil(sent.expiresAt)).toBeLessThanOrEqual(86400);
    expect(secondsUntil(sent.fileExpiresAt)).toBeGreaterThan(7 * 86400 - 300);
    expect((await fetch(sent.url)).status).toBe(200);
  });

  it.each([
    [["--expires", "soon"], /^airlock: --expires soon is not a duration/],
    [["--expires", "0"], /^airlock: --expires must be longer than 0 seconds/],
    [["--max-downloads", "0"], /^airlock: --max-downloads must be a whole number from 1/],
    [["--max-downloads", "2.5"], /^airlock: --max-downloads must be a whole number from 1/],
  ])("refuses %j as a usage error before sending", async (options, message) => {
    const { token, cwd, env } = await session();
    await writeFile(join(cwd, "x.bin"), randomBytes(100));
    const result = await runShim(["send", "x.bin", ...options], { cwd, env });
    expect(result.code).toBe(2);
    expect(failureLine(result)).toMatch(message);
    expect((await suite.api(token, "GET", "/v1/files")).body.files).toEqual([]);
  });
});

describe("re-sending an unchanged file", () => {
  /** Rewrites the cache entry of `path` to claim `sha256`, as a stale entry would. */
  async function forgeEntry(cacheHome: string, path: string, sha: string): Promise<void> {
    const file = join(cacheHome, "airlock", "sent.json");
    const entries = JSON.parse(await readFile(file, "utf8")) as Record<string, { sha256: string }>;
    expect(entries[path]).toBeDefined();
    entries[path]!.sha256 = sha;
    await writeFile(file, JSON.stringify(entries));
  }

  it("neither reads nor writes the cache for a file sent in one request", async () => {
    const { cwd, env } = await session();
    const small = randomBytes(100_000);
    const large = randomBytes(3 * MiB);
    await writeFile(join(cwd, "small.bin"), small);
    await writeFile(join(cwd, "large.bin"), large);
    const cache = join(env.XDG_CACHE_HOME, "airlock", "sent.json");
    const sent = sentLine(await runShim(["send", "small.bin", "--json"], { cwd, env }));
    expect(sent).toMatchObject({ sha256: sha256(small), uploadedBytes: small.length });
    const served = await fetch(sent.url);
    expect(sha256(Buffer.from(await served.arrayBuffer()))).toBe(sha256(small));
    await expect(readFile(cache)).rejects.toMatchObject({ code: "ENOENT" });
    const both = await runShim(["send", "small.bin", "large.bin", "--json"], { cwd, env });
    expect(both.code, both.stderr).toBe(0);
    const entries = JSON.parse(await readFile(cache, "utf8")) as Record<string, unknown>;
    expect(Object.keys(entries)).toEqual([join(cwd, "large.bin")]);
  });

  it("trusts the cache without hashing: a forged entry names what the relay dedups to", async () => {
    const { cwd, env } = await session();
    const a = randomBytes(3 * MiB);
    const b = randomBytes(3 * MiB);
    await writeFile(join(cwd, "a.bin"), a);
    await writeFile(join(cwd, "b.bin"), b);
    sentLine(await runShim(["send", "a.bin", "--json"], { cwd, env }));
    sentLine(await runShim(["send", "b.bin", "--json"], { cwd, env }));
    const again = sentLine(await runShim(["send", "a.bin", "--json"], { cwd, env }));
    expect(again).toMatchObject({ sha256: sha256(a), deduped: true, uploadedBytes: 0 });
    // A stale entry (claiming b's content) is believed: the file was not hashed again. The
    // worst it does is a hit on content this scope sent and the relay verified.
    await forgeEntry(env.XDG_CACHE_HOME, join(cwd, "a.bin"), sha256(b));
    const stale = sentLine(await runShim(["send", "a.bin", "--json"], { cwd, env }));
    expect(stale).toMatchObject({ sha256: sha256(b), deduped: true });
    const served = await fetch(stale.url);
    expect(sha256(Buffer.from(await served.arrayBuffer()))).toBe(sha256(b));
  });

  it("hashes after all when the relay holds no such content: a stale entry never sends wrong bytes", async () => {
    const { cwd, env } = await session();
    const a = randomBytes(3 * MiB);
    await writeFile(join(cwd, "a.bin"), a);
    sentLine(await runShim(["send", "a.bin", "--json"], { cwd, env }));
    await forgeEntry(env.XDG_CACHE_HOME, join(cwd, "a.bin"), sha256(randomBytes(64)));
    const sent = sentLine(await runShim(["send", "a.bin", "--json"], { cwd, env }));
    expect(sent).toMatchObject({ sha256: sha256(a), deduped: true });
    const served = await fetch(sent.url);
    expect(sha256(Buffer.from(await served.arrayBuffer()))).toBe(sha256(a));
  });
});

describe("Ctrl-C during a large send", () => {
  it(
    "prints how to resume with how much is stored, exits 130, and the same command resumes",
    { timeout: 300_000 },
    async () => {
      const { token, cwd } = await session();
      // Random, so sent as it is, in five parts: above the threshold the shim is given (24 MiB).
      const size = 5 * MIN_PART_BYTES;
      const cipher = createCipheriv("aes-128-ctr", randomBytes(16), Buffer.alloc(16));
      const bytes = cipher.update(Buffer.alloc(size));
      await writeFile(join(cwd, "big.bin"), bytes);
      const proxy = await startHoldingProxy(suite.relay.url, 1);
      try {
        // Patient retries: `wrangler dev` resets requests in flight while it reloads the Worker.
        const env = {
          ...relayEnv(proxy.url, token, 8),
          AIRLOCK_RETRY_BASE_MS: "250",
          AIRLOCK_MULTIPART_THRESHOLD: String(3 * MIN_PART_BYTES),
          XDG_CACHE_HOME: join(cwd, ".cache"),
        };
        const interrupted = await proxy.interrupt(
          [process.execPath, SHIM, "send", "big.bin", "--json"],
          cwd,
          { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, ...env },
        );
        expect(interrupted.code).toBe(130);
        expect(interrupted.stdout).toBe("");
        expect(failureLine(interrupted)).toBe(
          "airlock: interrupted: run the same command again to resume the upload of big.bin " +
            "(8.0 MiB of 40 MiB stored)",
        );
        proxy.release();

        // The relay reads a multipart upload back on its queue: the file may still be pending
        // (its owner can fetch it all the same), so stderr may carry that one note.
        const again = await runShim(["send", "big.bin", "--json"], {
          cwd,
          env,
          timeoutMs: 240_000,
        });
        expect(again.code).toBe(0);
        expect(again.stderrLines).toEqual(
          again.stderr === ""
            ? []
            : ["big.bin is still being verified by the relay (send --wait waits for it)"],
        );
        const resumed = JSON.parse(again.stdout) as SendResult;
        expect(resumed).toMatchObject({ size, sha256: sha256(bytes), deduped: false });
        expect(resumed.uploadedBytes).toBe(size - MIN_PART_BYTES);
        const got = await mkdtemp(join(suite.dir, "got-"));
        const fetched = await runShim(["get", resumed.fileId], {
          cwd: got,
          env,
          timeoutMs: 120_000,
        });
        expect(fetched.code, fetched.stderr).toBe(0);
        expect(sha256(await readFile(join(got, "big.bin")))).toBe(sha256(bytes));
      } finally {
        await proxy.stop();
      }
    },
  );
});
