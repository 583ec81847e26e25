import { mkdir, mkdtemp, readdir } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { apiCall } from "../support/api-call";
import { relaySuite } from "../support/relay-suite";
import { putToLink } from "../support/upload-link";
import { failureLine, relayEnv } from "../shim/run-shim";
import { runDriver, shimDrivers } from "../shim/shims";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";

// Issue 24 §3: a person holding only an upload link sends an archive of many tiny entries (a
// few hundred KB that would make tens of thousands of files); the sandbox's `pull --extract`
// refuses it whole before writing the entry over its limit, leaves nothing behind, keeps it in
// the inbox and says so in one line — in the Node and the Python shim. Against `wrangler dev`.

/** A ustar `.tar.gz` of `count` one-byte files under `many/` (about 1 KiB of tar each). */
function manyEntries(count: number): Buffer {
  const blocks: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const header = Buffer.alloc(512);
    header.write(`many/${i}.txt`, 0, 100, "utf8");
    header.write("0000644\0", 100, "latin1");
    header.write("0000000\0", 108, "latin1");
    header.write("0000000\0", 116, "latin1");
    header.write("00000000001\0", 124, "latin1");
    header.write(`${(1_700_000_000).toString(8).padStart(11, "0")}\0`, 136, "latin1");
    header.write("        ", 148, "latin1");
    header.write("0", 156, "latin1");
    header.write("ustar\u000000", 257, "latin1");
    const sum = header.reduce((total, byte) => total + byte, 0);
    header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "latin1");
    const body = Buffer.alloc(512);
    body.write("x");
    blocks.push(header, body);
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

describe("pull --extract of an archive of many entries, sent through an upload link", () => {
  const suite = relaySuite({}, "airlock-security-entries-");

  it.each(["node", "python"] as const)(
    "is refused whole by the %s shim, nothing written",
    async (name) => {
      const driver = (await shimDrivers(suite.dir)).find((d) => d.name === name)!;
      const shim = (args: string[], env: Record<string, string>) =>
        runDriver(driver, args, { env, cwd: suite.dir, home: suite.dir });
      const { token } = await suite.relay.mintSession();
      const env = relayEnv(suite.relay.url, token);
      const created = await apiCall(suite.relay.url, token, "POST", "/v1/requests", {});
      const link = created.body as unknown as CreatedRequest;

      // The stranger: 3,001 entries in about 60 KB, through the link and nothing else.
      const archive = manyEntries(3001);
      expect(archive.byteLength).toBeLessThan(100_000);
      const put = await putToLink(`${link.url}?name=many.tar.gz`, archive);
      expect(put.status).toBe(201);

      const dir = join(await mkdtemp(join(suite.dir, `${name}-`)), "uploads");
      await mkdir(dir);
      const refused = await shim(["pull", "--extract", "--max-entries", "3000", "--dir", dir], env);
      expect(refused.stdout).toBe("");
      expect(refused.code).toBe(1);
      expect(failureLine(refused)).toMatch(
        /^airlock: could not pull item \S+ \(many\.tar\.gz\), it stays in the inbox: refusing to extract many\.tar\.gz: "many\/3000\.txt" takes the archive over 3000 entries \(raise it with --max-entries\); nothing was extracted$/,
      );
      expect(await readdir(dir)).toEqual([]);
      const inbox = await apiCall(suite.relay.url, token, "GET", "/v1/inbox");
      expect((inbox.body.items as { name: string }[]).map((item) => item.name)).toEqual([
        "many.tar.gz",
      ]);

      // Raised past it, the same archive extracts.
      const taken = await shim(["pull", "--extract", "--max-entries", "3001", "--dir", dir], env);
      expect(taken.stderr).toBe("");
      expect(taken.code).toBe(0);
      expect(await readdir(join(dir, "many"))).toHaveLength(3001);
    },
  );
});
