import { createHash, randomBytes } from "node:crypto";
import { copyFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { relaySuite } from "../support/relay-suite";
import { loggedEvents } from "../support/relay-log";
import { runDriver } from "./shims";
import { firstByteSetUp } from "./first-byte-setup";

// `airlock send` of a large file from its first byte (docs/api.md, "Sending from the first
// byte"), by the Node and the Python shim: declared without its hashes, parts up as they are
// read, the SHA-256 at complete.

const MiB = 1024 * 1024;
/** Three parts of 8 MiB (the last one short) above a lowered multipart threshold. */
const SIZE = 20 * MiB + 4321;
const suite = relaySuite({}, "airlock-first-byte-");
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe.each(["node", "python"] as const)("%s shim: send from the first byte", (shim) => {
  it("declares without hashes, stores the bytes byte-exact, and finds a re-send a dedup hit at complete", async () => {
    const { driver, sessionId, token, cwd, env } = await firstByteSetUp(suite, shim);
    const send = async (name: string, ...flags: string[]) => {
      const result = await runDriver(driver, ["send", ...flags, "--json", name], {
        env,
        cwd,
        home: cwd,
      });
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      return JSON.parse(result.stdout.trim()) as SendResult;
    };
    const bytes = randomBytes(SIZE);
    await writeFile(join(cwd, "weights.bin"), bytes);
    const first = await send("weights.bin", "--wait");
    expect(first.sha256).toBe(sha256(bytes));
    expect(first.deduped).toBe(false);
    expect(first.uploadedBytes).toBe(SIZE);
    const served = await fetch(first.url);
    expect(sha256(Buffer.from(await served.arrayBuffer()))).toBe(sha256(bytes));

    // A copy the sent-cache does not know: its parts go up, and complete finds the content held.
    await copyFile(join(cwd, "weights.bin"), join(cwd, "copy.bin"));
    const again = await send("copy.bin");
    expect(again.deduped).toBe(true);
    expect(again.sha256).toBe(sha256(bytes));
    expect(again.fileId).not.toBe(first.fileId);

    const declared = (await loggedEvents(suite.relay)).filter(
      (e) => e.event === "upload_declared" && e.sessionId === sessionId,
    );
    // Each declare carried part 1's digest, so its answer signed part 1.
    expect(declared.map((e) => [e.hashAtComplete, e.outcome, e.signedParts])).toEqual([
      [true, "multipart", 1],
      [true, "multipart", 1],
    ]);
    const files = (await suite.api(token, "GET", "/v1/files")).body.files as { sha256: string }[];
    expect(files.map((f) => f.sha256)).toEqual([sha256(bytes), sha256(bytes)]);
  });
});
