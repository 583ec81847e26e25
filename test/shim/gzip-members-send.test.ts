// End to end: both shims send compressible files as gzip members with their table, through
// `wrangler dev` on both backends; the relay verifies the table, and every reader (a share
// link, each shim's `get`) gets the original back byte-exact from the multi-member object.
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import { MiB, sha256 } from "./gzip-member-checks";
import { relayEnv } from "./run-shim";
import { shimScratchDir } from "./scratch-dir";
import { sentLine } from "./sent-line";
import { logText } from "./shim-inputs";
import { runDriver, shimDrivers, type ShimDriver } from "./shims";

const scratch = shimScratchDir("airlock-gzip-send-");

/** CSV-like text that gzip halves, not more: its members go up in a PUT, not in one request. */
function csvText(bytes: number): Buffer {
  const rows: string[] = [];
  for (let i = 0, total = 0; total < bytes; i++) {
    const row = `${i},${randomBytes(12).toString("hex")},ok,${i % 97}\n`;
    rows.push(row);
    total += row.length;
  }
  return Buffer.from(rows.join("")).subarray(0, bytes);
}

const files: Array<[string, () => Buffer]> = [
  ["6 MiB of logs (stored under 1 MiB: one request)", () => logText(6 * MiB + 1234)],
  ["6 MiB of CSV (stored over 1 MiB: declare and PUT)", () => csvText(6 * MiB + 4321)],
];

interface Backend {
  relay: RunningRelay;
  stop(): Promise<void>;
}

const backends: Array<[string, () => Promise<Backend>]> = [
  ["r2", async () => ({ relay: await startRelay(), stop: async () => {} })],
  [
    "s3",
    async () => {
      const s3: StrictS3 = await startStrictS3();
      const relay = await startRelay({ storage: "s3", vars: s3Vars(s3) });
      return { relay, stop: () => s3.stop() };
    },
  ],
];

let drivers: ShimDriver[];
beforeAll(async () => {
  drivers = (await shimDrivers(scratch())).filter((d) => d.name !== "posix");
});

describe.each(backends)("gzip members through the relay on %s", (_, start) => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await start();
  }, 240_000);
  afterAll(async () => {
    await backend?.relay.stop();
    await backend?.stop();
  });

  for (const shim of ["node", "python"] as const) {
    it.each(files)(
      `the ${shim} shim sends %s, verified, and it reads back byte-exact`,
      async (_, make) => {
        const driver = drivers.find((d) => d.name === shim)!;
        const { token } = await backend.relay.mintSession();
        const cwd = await mkdtemp(join(scratch(), `${shim}-`));
        const run = (args: string[]) =>
          runDriver(driver, args, { env: relayEnv(backend.relay.url, token), cwd, home: cwd });
        const original = make();
        await writeFile(join(cwd, "data.txt"), original);

        const sent = sentLine(await run(["send", "data.txt", "--json", "--wait"]));
        expect(sent).toMatchObject({
          size: original.length,
          sha256: sha256(original),
          status: "verified",
        });
        // Stored gzipped: fewer bytes went up than the file has.
        expect(sent.uploadedBytes).toBeGreaterThan(0);
        expect(sent.uploadedBytes).toBeLessThan(original.length * 0.9);

        const link = await fetch(sent.url);
        expect(link.status).toBe(200);
        expect(sha256(Buffer.from(await link.arrayBuffer()))).toBe(sha256(original));

        // A range in the last member: the relay reads it through the table, byte-exact.
        const tail = await fetch(sent.url, { headers: { range: "bytes=-100" } });
        expect(tail.status).toBe(206);
        expect(Buffer.from(await tail.arrayBuffer()).equals(original.subarray(-100))).toBe(true);

        const got = await run(["get", sent.fileId, "-o", "back.txt"]);
        expect(got.code, got.stderr).toBe(0);
        expect(sha256(await readFile(join(cwd, "back.txt")))).toBe(sha256(original));
      },
    );
  }
});
