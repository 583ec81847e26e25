import { createHash, randomBytes } from "node:crypto";
import { copyFile, mkdtemp, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { relaySuite } from "../support/relay-suite";
import { loggedEvents } from "../support/relay-log";
import { relayEnv, runShim } from "./run-shim";
import { sentLine } from "./sent-line";

// `airlock send` of a large file from its first byte (docs/api.md, "Sending from the first
// byte"): declared without its hashes, parts up as they are read, the SHA-256 at complete.

const MiB = 1024 * 1024;
/** Three parts of 8 MiB (the last one short) above a lowered multipart threshold. */
const SIZE = 20 * MiB + 4321;
const suite = relaySuite({}, "airlock-first-byte-");
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("airlock send from the first byte", () => {
  it("declares without hashes, stores the bytes byte-exact, and finds a re-send a dedup hit at complete", async () => {
    const { sessionId, token } = await suite.relay.mintSession();
    const cwd = await mkdtemp(join(suite.dir, "work-"));
    const env = {
      ...relayEnv(suite.relay.url, token),
      XDG_CACHE_HOME: join(cwd, ".cache"),
      AIRLOCK_MULTIPART_THRESHOLD: String(8 * MiB),
    };
    const bytes = randomBytes(SIZE);
    await writeFile(join(cwd, "weights.bin"), bytes);
    const first = sentLine(
      await runShim(["send", "--wait", "--json", "weights.bin"], { cwd, env }),
    );
    expect(first.sha256).toBe(sha256(bytes));
    expect(first.deduped).toBe(false);
    expect(first.uploadedBytes).toBe(SIZE);
    const served = await fetch(first.url);
    expect(sha256(Buffer.from(await served.arrayBuffer()))).toBe(sha256(bytes));

    // A copy the sent-cache does not know: its parts go up, and complete finds the content held.
    await copyFile(join(cwd, "weights.bin"), join(cwd, "copy.bin"));
    const again = sentLine(await runShim(["send", "--json", "copy.bin"], { cwd, env }));
    expect(again.deduped).toBe(true);
    expect(again.sha256).toBe(sha256(bytes));
    expect(again.fileId).not.toBe(first.fileId);

    const declared = (await loggedEvents(suite.relay)).filter(
      (e) => e.event === "upload_declared" && e.sessionId === sessionId,
    );
    expect(declared.map((e) => [e.hashAtComplete, e.outcome])).toEqual([
      [true, "multipart"],
      [true, "multipart"],
    ]);
    const files = (await suite.api(token, "GET", "/v1/files")).body.files as { sha256: string }[];
    expect(files.map((f) => f.sha256)).toEqual([sha256(bytes), sha256(bytes)]);
  });
});
