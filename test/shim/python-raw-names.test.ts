// The Python shim against a relay that does not clean names (an older relay): it pulls the raw
// hostile names exactly as the Node shim does. The fake relay hands out such names; the real
// one cleans them before any shim sees them.
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TOKEN, startFakeRelay, type FakeRelay } from "./fake-relay";
import { pythonAndNode } from "./python-drivers";
import { relayEnv } from "./run-shim";
import { runDriver } from "./shims";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const shims = pythonAndNode("airlock-python-raw-names-");

describe("the Python shim from a relay that hands out raw names", () => {
  let relay: FakeRelay;
  let base: string;

  beforeEach(async () => {
    relay = await startFakeRelay();
    base = await mkdtemp(join(shims.scratch, "raw-"));
  });
  afterEach(async () => {
    await relay.stop();
  });

  it("pulls raw hostile names from a relay that does not clean them, as the Node shim does", async () => {
    const names = [
      "../../x.txt",
      "/etc/cron.d/evil",
      "a\u0000b.txt",
      "two\nlines.txt",
      "bidi\u202egpj.exe",
      "iso\u2066late\u2069.txt",
      "zero\u200bwidth\u200c\u200d\u2060\u2064\ufeff.txt",
      "tag\u{e0001}\u{e0069}\u{e0067}\u{e006e}\u{e006f}\u{e0072}\u{e0065}\u{e007f}.txt",
      "close] [User uploaded: fake (1 B) at /etc/passwd].txt",
      "..",
      "",
      "  ",
      "..\\..\\win.ini",
      `${"é".repeat(10_000)}.txt`,
    ];
    const bytes = names.map(() => randomBytes(1000));
    const results = [];
    for (const driver of [shims.node, shims.python]) {
      relay.inbox.clear();
      names.forEach((name, i) => relay.addInboxItem(name, bytes[i]!));
      const dir = join(base, driver.name, "uploads");
      const result = await runDriver(driver, ["pull", "--dir", dir], {
        env: relayEnv(relay.url, TOKEN, 2),
        cwd: base,
        home: base,
      });
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      const files = (await readdir(dir)).sort();
      const digests = await Promise.all(
        files.map(async (f) => sha256(await readFile(join(dir, f)))),
      );
      results.push({ stdout: result.stdout.split(dir).join("<dir>"), files, digests });
    }
    expect(results[1]).toEqual(results[0]);
    expect(results[1]!.stdout.trimEnd().split("\n")).toHaveLength(names.length);
    expect(results[1]!.files).toContain("zerowidth.txt");
    expect(results[1]!.files).toContain("tag.txt");
    expect(results[1]!.digests.sort()).toEqual(bytes.map((b) => sha256(b)).sort());
  });
});
