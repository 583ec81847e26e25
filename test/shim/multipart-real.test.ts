// `airlock send` above the multipart threshold against the run's shared relay, for what needs
// no store fault: a directory whose archive goes up in parts, and a concurrency setting refused
// before any request.
import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, readdir, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { apiCall } from "../support/api-call";
import { loggedEvents } from "../support/relay-log";
import { sharedRelay } from "../support/shared-relay";
import { failureLine, runShim, relayEnv } from "./run-shim";
import { shimScratchDir } from "./scratch-dir";

const MiB = 1024 * 1024;
/** The lowest threshold the shim takes (one smallest part): a 12 MiB archive goes in 2 parts. */
const THRESHOLD = 8 * MiB;
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const root = shimScratchDir("airlock-multipart-real-");

describe("airlock send above the multipart threshold, to the relay", () => {
  let session: { sessionId: string; token: string };
  let base: string;

  beforeEach(async () => {
    session = await sharedRelay().mintSession();
    base = await mkdtemp(join(root(), "t-"));
  });
  const send = (args: string[], extra: Record<string, string> = {}) =>
    runShim(["send", "--json", ...args], {
      cwd: base,
      env: {
        ...relayEnv(sharedRelay().url, session.token),
        HOME: base,
        AIRLOCK_MULTIPART_THRESHOLD: String(THRESHOLD),
        ...extra,
      },
    });
  const files = async () =>
    (await apiCall(sharedRelay().url, session.token, "GET", "/v1/files")).body.files as unknown[];

  it("sends a directory whose archive is above the threshold in parts, and gets it back whole", async () => {
    const bytes = randomBytes(12 * MiB);
    await mkdir(join(base, "tree"));
    await writeFile(join(base, "tree", "random.bin"), bytes);
    const result = await send(["tree"]);
    // The relay reads a multipart upload back on its queue: the file may still be pending (its
    // owner can fetch it all the same), so stderr may carry that one note.
    expect(result.stderrLines).toEqual(
      result.stderr === ""
        ? []
        : ["tree.tar.gz is still being verified by the relay (send --wait waits for it)"],
    );
    expect(result.code).toBe(0);
    const sent = JSON.parse(result.stdout) as SendResult;
    expect(sent).toMatchObject({ archive: true, name: "tree.tar.gz", files: 1 });
    expect(sent.uploadedBytes).toBe(sent.size);
    expect(sent.size).toBeGreaterThan(THRESHOLD);
    // The relay logged the declaration as a multipart one.
    const declared = await loggedEvents(sharedRelay());
    expect(
      declared
        .filter((e) => e.event === "upload_declared" && e.sessionId === session.sessionId)
        .map((e) => e.outcome),
    ).toEqual(["multipart"]);

    const out = join(base, "out");
    const got = await runShim(["get", sent.fileId, "--extract", "-o", out], {
      cwd: base,
      env: relayEnv(sharedRelay().url, session.token),
    });
    expect(got.stderr).toBe("");
    expect(got.code).toBe(0);
    expect(await readdir(join(out, "tree"))).toEqual(["random.bin"]);
    expect(sha256(await readFile(join(out, "tree", "random.bin")))).toBe(sha256(bytes));
  });

  it("refuses an AIRLOCK_UPLOAD_CONCURRENCY out of range before sending anything", async () => {
    // Above the threshold (zeros, sparse: made at once), where the setting would count.
    await writeFile(join(base, "big.bin"), "");
    await truncate(join(base, "big.bin"), 2 * THRESHOLD);
    const result = await send(["big.bin"], { AIRLOCK_UPLOAD_CONCURRENCY: "17" });
    expect(result.code).toBe(2);
    expect(failureLine(result)).toMatch(
      /AIRLOCK_UPLOAD_CONCURRENCY must be an integer from 1 to 16/,
    );
    expect(result.stdout).toBe("");
    expect(await files()).toEqual([]);
  });
});
