// Bounded extraction on the sandbox side: archive bombs (a pax or GNU long-name header declaring
// 300 MiB, an entry declaring 11 GiB, a gzip of zeros) pulled or fetched with --extract from the
// run's shared relay, the operator's seed putting them in the inbox. The shim must stay within
// bounded memory and disk, write nothing of a refused archive, and let it hold up nothing.
import { spawn } from "node:child_process";
import { mkdtemp, readdir } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { beforeEach, describe, expect, it } from "vitest";
import type { InboxRecord } from "../../src/wire-types";
import { apiCall } from "../support/api-call";
import { seedInbox } from "../support/seed-inbox";
import { sharedRelay } from "../support/shared-relay";
import { RUNTIMES, SHIM, relayEnv, runShim } from "../shim/run-shim";
import { shimScratchDir } from "../shim/scratch-dir";
import { MiB, allPaths, childEnv, gzipWithZeros, tarHeader } from "./sandbox-side-names-support";

const root = shimScratchDir("airlock-sandbox-archives-");

/** A session of its own on the shared relay, and a fresh directory, per test. */
function perTest(prefix: string) {
  const ctx = { session: { sessionId: "", token: "" }, base: "" };
  beforeEach(async () => {
    ctx.session = await sharedRelay().mintSession();
    ctx.base = await mkdtemp(join(root(), prefix));
  });
  return {
    ctx,
    seed: (name: string, bytes: Uint8Array): Promise<InboxRecord> =>
      seedInbox(sharedRelay(), ctx.session.sessionId, name, bytes),
    /** Item ids still in the session's inbox. */
    waiting: async () =>
      (
        (await apiCall(sharedRelay().url, ctx.session.token, "GET", "/v1/inbox")).body
          .items as InboxRecord[]
      ).map((item) => item.itemId),
  };
}

describe.each(RUNTIMES.slice(0, 2))(
  "airlock pull --extract of archive bombs under $name",
  ({ node }) => {
    const { ctx, seed, waiting } = perTest("t-");
    let session: { sessionId: string; token: string };
    let base: string;
    let dir: string;

    beforeEach(() => {
      session = ctx.session;
      base = ctx.base;
      dir = join(base, "sandbox", "uploads");
    });

    const pull = (args: string[] = []) =>
      runShim(["pull", "--dir", dir, ...args], {
        node,
        cwd: base,
        env: relayEnv(sharedRelay().url, session.token, 2),
      });

    it.each([
      ["a pax header", "x"],
      ["a GNU long name", "L"],
    ])(
      "refuses %s declaring 300 MiB without buffering it, and pulls the rest",
      async (_what, flag) => {
        const bomb = await gzipWithZeros(tarHeader("bomb", flag, 300 * MiB), 300 * MiB);
        expect(bomb.length).toBeLessThan(1 * MiB);
        const item = await seed("bomb.tar.gz", bomb);
        await seed("fine.txt", Buffer.from("fine\n"));

        // Peak RSS of the shim, as the kernel counts it.
        const child = spawn(
          "/usr/bin/time",
          ["-f", "maxrss-kb=%M", node, SHIM, "pull", "--dir", dir, "--extract"],
          {
            env: childEnv(relayEnv(sharedRelay().url, session.token, 2)),
            cwd: base,
          },
        );
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
        const code = await new Promise<number | null>((resolve) => child.once("close", resolve));

        const lines = stderr
          .replace(/\n$/, "")
          .split("\n")
          .filter((line) => !line.startsWith("Command exited with"));
        const rss = Number(/^maxrss-kb=(\d+)$/.exec(lines.pop() ?? "")?.[1]);
        // Buffering the header would take 300 MiB and more; the shim alone takes a few tens.
        expect(rss).toBeGreaterThan(0);
        expect(rss).toBeLessThan(200 * 1024);
        expect(lines).toEqual([
          `airlock: could not pull item ${item.itemId} (bomb.tar.gz), it stays in the inbox: ` +
            "cannot extract bomb.tar.gz: pax or GNU long-name headers over 1 MiB for one entry",
        ]);
        expect(code).toBe(1);
        expect(stdout).toBe(`[User uploaded: fine.txt (5 B) at ${join(dir, "fine.txt")}]\n`);
        expect(await readdir(dir)).toEqual(["fine.txt"]);
        expect(await waiting()).toEqual([item.itemId]);
      },
    );

    it("refuses an entry declaring 11 GiB under the default cap, writing nothing", async () => {
      const archive = gzipSync(
        Buffer.concat([
          tarHeader("big/", "5", 0, 0o755),
          tarHeader("big/huge.bin", "0", 11 * 1024 ** 3),
        ]),
      );
      const item = await seed("huge.tar.gz", archive);
      const result = await pull(["--extract"]);
      expect(result.code).toBe(1);
      expect(result.stderrLines).toEqual([
        `airlock: could not pull item ${item.itemId} (huge.tar.gz), it stays in the inbox: ` +
          `refusing to extract huge.tar.gz: "big/huge.bin" takes the archive over ${10 * 1024 ** 3} ` +
          "bytes extracted (raise it with --max-bytes); nothing was extracted",
      ]);
      expect(await readdir(dir)).toEqual([]);
    });

    it("stops a gzip bomb at --max-bytes and removes what it wrote", async () => {
      // 64 MiB of zeros in one entry, in well under 1 MiB of archive.
      const archive = await gzipWithZeros(tarHeader("z/zeros.bin", "0", 64 * MiB), 64 * MiB);
      expect(archive.length).toBeLessThan(MiB);
      const item = await seed("zeros.tar.gz", archive);
      const result = await pull(["--extract", "--max-bytes", "16M"]);
      expect(result.code).toBe(1);
      expect(result.stderrLines).toEqual([
        `airlock: could not pull item ${item.itemId} (zeros.tar.gz), it stays in the inbox: ` +
          `refusing to extract zeros.tar.gz: "z/zeros.bin" takes the archive over ${16 * MiB} ` +
          "bytes extracted (raise it with --max-bytes); nothing was extracted",
      ]);
      expect(await allPaths(base)).toEqual(["sandbox", "sandbox/uploads"]);
      expect(await waiting()).toEqual([item.itemId]);
    });
  },
);

describe("airlock get --extract of an archive bomb", () => {
  const { ctx, seed } = perTest("g-");
  let session: { sessionId: string; token: string };
  let base: string;

  beforeEach(() => {
    session = ctx.session;
    base = ctx.base;
  });

  it("refuses an archive over --max-bytes, leaving nothing, with one line", async () => {
    const archive = await gzipWithZeros(tarHeader("z/zeros.bin", "0", 8 * MiB), 8 * MiB);
    const item = await seed("zeros.tar.gz", archive);
    const result = await runShim(
      ["get", item.file.fileId, "--extract", "-o", base, "--max-bytes", "4M"],
      { cwd: base, env: relayEnv(sharedRelay().url, session.token, 2) },
    );
    expect(result.code).toBe(1);
    expect(result.stderrLines).toEqual([
      `airlock: refusing to extract zeros.tar.gz: "z/zeros.bin" takes the archive over ${4 * MiB} ` +
        "bytes extracted (raise it with --max-bytes); nothing was extracted",
    ]);
    expect(result.stdout).toBe("");
    expect(await readdir(base)).toEqual([]);
  });
});
