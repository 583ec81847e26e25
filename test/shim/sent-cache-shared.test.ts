import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { relaySuite } from "../support/relay-suite";
import { loggedEvents } from "../support/relay-log";
import { relayEnv } from "./run-shim";
import { runDriver, shimDrivers, type ShimDriver } from "./shims";

// The sent-cache (agent-shim/src/upload/sent-cache.ts): the Python shim keeps the same file in
// the same place and format as the Node shim, so an unchanged file sent by either is re-sent
// by the other without a hash pass and with no upload: one declare, answered as a dedup hit.

const MiB = 1024 * 1024;
const suite = relaySuite({}, "airlock-sent-cache-");
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("the sent-cache, shared by the Node and Python shims", () => {
  it("re-sends an unchanged 9 MiB file with one declare and no upload, whichever shim sent it", async () => {
    const drivers = await shimDrivers(suite.dir);
    const node = drivers.find((d) => d.name === "node")!;
    const python = drivers.find((d) => d.name === "python")!;
    const { sessionId, token } = await suite.relay.mintSession();
    const cwd = await mkdtemp(join(suite.dir, "work-"));
    const env = relayEnv(suite.relay.url, token);
    const send = async (driver: ShimDriver, name: string) => {
      const before = (await declaresOf(sessionId)).length;
      const result = await runDriver(driver, ["send", "--wait", "--json", name], {
        env,
        cwd,
        home: cwd,
      });
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      // The relay's log reaches its file a moment after the answer: wait for this send's last
      // line (a dedup hit, or the completion of an upload), so the next send counts only its own.
      const settled = (lines: string[]) =>
        lines.some((l) => ["declared deduped", "upload_completed", "single_upload"].includes(l));
      let declares: string[] = [];
      for (let waited = 0; !settled(declares) && waited < 15_000; waited += 100) {
        declares = (await declaresOf(sessionId)).slice(before);
        if (!settled(declares)) await new Promise((r) => setTimeout(r, 100));
      }
      return { result: JSON.parse(result.stdout.trim()) as SendResult, declares };
    };
    const a = randomBytes(9 * MiB);
    const b = randomBytes(9 * MiB);
    await writeFile(join(cwd, "a.bin"), a);
    await writeFile(join(cwd, "b.bin"), b);

    // Node sends a.bin, Python re-sends it from Node's entry; Python sends b.bin, Node re-sends it.
    for (const [first, second, file, bytes] of [
      [node, python, "a.bin", a],
      [python, node, "b.bin", b],
    ] as const) {
      const sent = await send(first, file);
      expect(sent.result).toMatchObject({ deduped: false, sha256: sha256(bytes) });
      const again = await send(second, file);
      expect(again.result).toMatchObject({
        deduped: true,
        uploadedBytes: 0,
        sha256: sha256(bytes),
      });
      expect(Object.keys(again.result).sort()).toEqual(Object.keys(sent.result).sort());
      expect(again.declares).toEqual(["declared deduped"]);
    }
    const cache = JSON.parse(
      await readFile(join(cwd, ".cache/airlock/sent.json"), "utf8"),
    ) as Record<string, Record<string, unknown>>;
    expect(Object.keys(cache).sort()).toEqual([resolve(cwd, "a.bin"), resolve(cwd, "b.bin")]);
    for (const entry of Object.values(cache)) {
      expect(Object.keys(entry).sort()).toEqual(["ctimeMs", "ino", "mtimeMs", "sha256", "size"]);
    }

    // The Python shim trusts an entry whose stamp is unchanged without reading the file: one
    // whose SHA-256 names other content this scope holds makes the send a hit on that content.
    const stamp = cache[resolve(cwd, "b.bin")]!;
    cache[resolve(cwd, "b.bin")] = { ...stamp, sha256: sha256(a) };
    await writeFile(join(cwd, ".cache/airlock/sent.json"), JSON.stringify(cache));
    const stale = await send(python, "b.bin");
    expect(stale.result).toMatchObject({ deduped: true, sha256: sha256(a) });
    expect(stale.declares).toEqual(["declared deduped"]);
  });
});

/** The session's uploads as the relay logged them: each declare's outcome, each completion. */
async function declaresOf(sessionId: string): Promise<string[]> {
  const events = await loggedEvents(suite.relay);
  return events
    .filter((e) => e.sessionId === sessionId)
    .flatMap((e) =>
      e.event === "upload_declared"
        ? [`declared ${String(e.outcome)}`]
        : e.event === "upload_completed" || e.event === "single_upload"
          ? [e.event]
          : [],
    );
}
