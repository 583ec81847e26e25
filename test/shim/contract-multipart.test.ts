// The shim contract above the multipart threshold: the Node and Python shims send in parts and
// resume after a failed run against the fake relay (a store part that keeps failing is a fault
// the real relay cannot be made to show); the POSIX shim, which has no parts, sends a file above
// the threshold in one PUT to the run's shared relay, byte-exact all the same.
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { loggedEvents } from "../support/relay-log";
import { TOKEN, startFakeRelay, type FakeRelay } from "./fake-relay";
import { failureLine, relayEnv } from "./run-shim";
import { runDriver } from "./shims";
import { MiB, contractSuite, download, sha256, shimSession } from "./contract-support";

/**
 * Above the threshold the shims are given (AIRLOCK_MULTIPART_THRESHOLD, 24 MiB; 64 MiB by
 * default): 6 parts of 8 MiB, the last one short.
 */
const SIZE = 40 * MiB + 1234;
const THRESHOLD = { AIRLOCK_MULTIPART_THRESHOLD: String(24 * MiB) };

const contract = contractSuite("airlock-contract-multipart-");

describe.each(["node", "python"] as const)(
  "the %s shim above the multipart threshold (fake relay)",
  (name) => {
    let relay: FakeRelay;
    let work: string;
    let home: string;

    beforeAll(async () => {
      work = await mkdtemp(join(contract.suite.dir, `${name}-big-`));
      home = await mkdtemp(join(contract.suite.dir, `${name}-big-home-`));
      await writeFile(join(work, "big.bin"), randomBytes(SIZE));
    });
    beforeEach(async () => {
      relay = await startFakeRelay();
    });
    afterEach(async () => {
      await relay.stop();
    });

    const airlock = (args: string[]) =>
      runDriver(contract.driver(name), args, {
        env: { ...relayEnv(relay.url, TOKEN, 2), AIRLOCK_UPLOAD_CONCURRENCY: "3", ...THRESHOLD },
        cwd: work,
        home,
        timeoutMs: 300_000,
      });

    it("sends in parts, several at once, and resumes after a failed run", async () => {
      const digest = sha256(await readFile(join(work, "big.bin")));
      relay.failPart(5, 1000);
      const failed = await airlock(["send", "--json", "big.bin"]);
      expect(failed.stdout).toBe("");
      expect(failed.code).toBe(1);
      expect(failureLine(failed)).toMatch(/part 5 of 6/);
      expect(relay.files.size).toBe(0);
      expect(relay.parts.maxInFlight).toBeGreaterThan(1);

      relay.failPart(5, 0);
      const resumed = await airlock(["send", "--json", "big.bin"]);
      expect(resumed.stderr).toBe("");
      expect(resumed.code).toBe(0);
      const result = JSON.parse(resumed.stdout) as Record<string, unknown>;
      expect(result).toMatchObject({ size: SIZE, sha256: digest, deduped: false });
      expect(result.uploadedBytes as number).toBeGreaterThan(0);
      expect(result.uploadedBytes as number).toBeLessThan(SIZE);
      expect(relay.routes().some((r) => /^GET \/v1\/uploads\/[^/]+$/.test(r))).toBe(true);
      expect([...relay.files.values()].map((f) => sha256(f.bytes))).toEqual([digest]);
    }, 600_000);
  },
);

describe("the posix shim above the multipart threshold", () => {
  const s = shimSession(contract, "posix");

  it("sends the file in one PUT, byte-exact (it has no parts)", async () => {
    expect(s.supports("multipart")).toBe(false);
    // Above the lowest threshold a shim takes (one smallest part, 8 MiB).
    const bytes = randomBytes(12 * MiB);
    await writeFile(join(s.work, "big.bin"), bytes);
    const result = await s.airlock(["send", "big.bin"], {
      AIRLOCK_MULTIPART_THRESHOLD: String(8 * MiB),
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(sha256(await download(result.stdout.trim()))).toBe(sha256(bytes));
    // The relay logged a declaration for a single PUT, none for parts.
    const declared = (await loggedEvents(contract.suite.relay)).filter(
      (e) => e.event === "upload_declared" && e.sessionId === s.sessionId,
    );
    const outcomes = declared.map((e) => e.outcome);
    expect(outcomes).toContain("upload");
    expect(outcomes).not.toContain("multipart");
  }, 300_000);
});
