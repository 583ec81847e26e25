// `airlock send` of files above the multipart threshold against the fake relay: parts in
// flight at once, retried one by one, resumed after a failure or a killed run. Resuming a saved
// upload is in multipart-resume.test.ts; the cases that need no store fault run against the real
// relay in multipart-real.test.ts.
import { spawn } from "node:child_process";
import { closeSync, openSync, writeSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { partCount, partLength } from "../../src/part-plan";
import { SHIM, failureLine } from "./run-shim";
import {
  PART,
  PARTS,
  RANDOM_SIZE,
  TEXT_SIZE,
  THRESHOLD,
  fakeMultipart,
  multipartFiles,
} from "./multipart-fixture";

const files = multipartFiles(true);

describe("airlock send of a file above the multipart threshold", () => {
  const m = fakeMultipart(files);

  it("sends a 40 MiB random file in 8 MiB parts, AIRLOCK_UPLOAD_CONCURRENCY=4 at once, byte-exact", async () => {
    const result = m.sent(await m.send(files.randomPath, { AIRLOCK_UPLOAD_CONCURRENCY: "4" }));
    expect(result.sha256).toBe(files.randomSha);
    expect(m.stored(result)).toBe(files.randomSha);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE);
    const upload = m.onlyUpload();
    expect(upload.encoding).toBe("identity");
    expect(upload.partSize).toBe(PART);
    expect(upload.partSha256).toHaveLength(PARTS);
    const lengths = m.relay.parts.puts.map((p) => [p.partNumber, p.bytes, p.status]);
    expect(lengths.sort((a, b) => a[0]! - b[0]!)).toEqual(
      Array.from({ length: PARTS }, (_, i) => [
        i + 1,
        i < PARTS - 1 ? PART : RANDOM_SIZE - (PARTS - 1) * PART,
        200,
      ]),
    );
    expect(m.relay.parts.maxInFlight).toBeGreaterThanOrEqual(2);
    expect(m.relay.parts.maxInFlight).toBeLessThanOrEqual(4);
    expect(await m.stateFiles()).toEqual([]);
  });

  it("gzips a 40 MiB text file and, with AIRLOCK_UPLOAD_CONCURRENCY=1, sends one part at a time", async () => {
    const result = m.sent(await m.send(files.textPath, { AIRLOCK_UPLOAD_CONCURRENCY: "1" }));
    expect(m.stored(result)).toBe(files.textSha);
    const upload = m.onlyUpload();
    expect(upload.encoding).toBe("gzip");
    expect(upload.storedSize).toBeGreaterThan(THRESHOLD);
    expect(upload.storedSize).toBeLessThan(TEXT_SIZE);
    const count = partCount(upload.storedSize, PART);
    expect(upload.partSha256).toHaveLength(count);
    expect(m.relay.parts.puts.map((p) => p.bytes)).toEqual(
      Array.from({ length: count }, (_, i) => partLength(upload.storedSize, PART, i + 1)),
    );
    expect(m.relay.parts.maxInFlight).toBe(1);
    expect(result.uploadedBytes).toBe(upload.storedSize);
  });

  it("retries a part that fails twice with 503, and sends only that part again", async () => {
    m.relay.failPart(3, 2);
    const result = m.sent(await m.send(files.randomPath));
    expect(m.stored(result)).toBe(files.randomSha);
    expect(m.putsOf(3).map((p) => p.status)).toEqual([503, 503, 200]);
    for (let n = 1; n <= PARTS; n++) if (n !== 3) expect(m.putsOf(n)).toHaveLength(1);
    expect(m.relay.parts.bytesReceived).toBe(RANDOM_SIZE + 2 * PART);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE);
  });

  it("ends with one stderr line when a part keeps failing, keeps the upload, and resumes it", async () => {
    m.relay.failPart(2, 1000);
    m.relay.stallPart(3); // in flight when part 2 gives up: dropped, not waited for
    // A stalled part is never answered: had the shim waited for it, it would still be waiting.
    // Parts in flight from the start, so that part 3 is under way when part 2 gives up.
    const first = await m.send(files.randomPath, { AIRLOCK_UPLOAD_CONCURRENCY: "4" });
    expect(first.code).toBe(1);
    expect(failureLine(first)).toMatch(
      /^airlock: storage error during upload of random\.bin \(part 2 of 6\): ServiceUnavailable.*\(after 3 attempts\)$/,
    );
    expect(first.stdout).toBe("");
    expect(m.putsOf(2)).toHaveLength(3);
    // The stalled part 3 was dropped by the shim (its connection closed unanswered).
    const deadline = Date.now() + 10_000;
    while (!m.putsOf(3).some((p) => p.status === 0) && Date.now() < deadline) await sleep(20);
    expect(m.putsOf(3).map((p) => p.status)).toContain(0);
    expect(m.relay.routes().filter((r) => r.endsWith("/complete"))).toEqual([]);
    const upload = m.onlyUpload();
    const [state] = await m.stateFiles();
    const saved = JSON.parse(await readFile(join(m.stateDir(), state!), "utf8")) as {
      uploadId: string;
      path: string;
    };
    expect(saved.uploadId).toBe(upload.uploadId);
    expect(saved.path).toBe(files.randomPath);

    m.relay.failPart(2, 0);
    m.relay.stallPart(3, false);
    const missing = m.missingBytes(upload);
    const received = m.relay.parts.bytesReceived;
    const result = m.sent(await m.send(files.randomPath));
    expect(m.relay.routes()).toContain(`GET /v1/uploads/${upload.uploadId}`);
    expect(m.uploads()).toHaveLength(1); // resumed, not declared anew
    expect(result.uploadedBytes).toBe(missing);
    expect(m.relay.parts.bytesReceived - received).toBe(missing);
    expect(m.stored(result)).toBe(files.randomSha);
    expect(await m.stateFiles()).toEqual([]);
  });

  it("stops with one line when the file changes while its parts go up", async () => {
    const path = await m.copyOfRandom("growing.bin");
    let changed = false;
    m.relay.onPartBytes(() => {
      if (changed) return;
      changed = true;
      // Same size, so only the last part's digest can tell.
      const handle = openSync(path, "r+");
      writeSync(handle, Buffer.from("changed"), 0, 7, RANDOM_SIZE - 100);
      closeSync(handle);
    });
    const result = await m.send(path, { AIRLOCK_UPLOAD_CONCURRENCY: "2" });
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe(
      "airlock: growing.bin changed while it was being sent; send it again once it is complete",
    );
    expect(m.putsOf(PARTS).filter((p) => p.status === 200)).toEqual([]);
  });

  it("after a SIGKILL half-way, sends again only the parts the store does not hold", async () => {
    // Two parts in flight: a kill at half the bytes leaves parts held as well as missing.
    const child = spawn(process.execPath, [SHIM, "send", "--json", files.randomPath], {
      cwd: files.base,
      env: { ...m.shimEnv(), AIRLOCK_UPLOAD_CONCURRENCY: "2" },
      stdio: "ignore",
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once("close", (_code, signal) => resolve(signal)),
    );
    m.relay.onPartBytes((total) => {
      if (total >= RANDOM_SIZE / 2) child.kill("SIGKILL");
    });
    expect(await exited).toBe("SIGKILL");
    m.relay.onPartBytes(undefined);
    const deadline = Date.now() + 10_000;
    while (m.relay.parts.inFlight > 0 && Date.now() < deadline) await sleep(20);
    expect(m.relay.parts.inFlight).toBe(0);
    const upload = m.onlyUpload();
    const missing = m.missingBytes(upload);
    expect(upload.held.size).toBeGreaterThan(0);
    expect(missing).toBeGreaterThan(0);
    expect(await m.stateFiles()).toHaveLength(1);

    const received = m.relay.parts.bytesReceived;
    const result = m.sent(await m.send(files.randomPath));
    expect(m.uploads()).toHaveLength(1);
    expect(m.relay.parts.bytesReceived - received).toBeLessThanOrEqual(missing + PART);
    expect(result.uploadedBytes).toBe(missing);
    expect(m.stored(result)).toBe(files.randomSha);
    expect(await m.stateFiles()).toEqual([]);
  });

  it("reports the file when a killed run had completed the upload but not forgotten it", async () => {
    const child = spawn(process.execPath, [SHIM, "send", "--json", files.randomPath], {
      cwd: files.base,
      env: m.shimEnv(),
      stdio: "ignore",
    });
    const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
    // Killed as it asks to complete: the relay completes all the same.
    m.relay.onCall((call) => {
      if (call.path.endsWith("/complete")) child.kill("SIGKILL");
    });
    await exited;
    m.relay.onCall(undefined);
    expect(m.onlyUpload().file).toBeDefined();
    expect(await m.stateFiles()).toHaveLength(1);

    const puts = m.relay.parts.puts.length;
    const result = m.sent(await m.send(files.randomPath));
    expect(result.fileId).toBe(m.onlyUpload().file!.fileId);
    expect(result.uploadedBytes).toBe(0);
    expect(m.relay.parts.puts).toHaveLength(puts);
    expect(await m.stateFiles()).toEqual([]);
  });
});
