import { spawn } from "node:child_process";
import { closeSync, openSync, writeSync } from "node:fs";
import { createHash, randomBytes } from "node:crypto";
import {
  copyFile,
  mkdir,
  mkdtemp,
  open,
  readFile,
  readdir,
  rm,
  utimes,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { partCount, partLength } from "../../src/part-plan";
import { TOKEN, startFakeRelay, type FakeMultipartUpload, type FakeRelay } from "./fake-relay";
import { SHIM, failureLine, prepareShim, runShim, type ShimResult, relayEnv } from "./run-shim";

// `airlock send` of files above the multipart threshold against the fake relay: parts in
// flight at once, retried one by one, resumed after a failure or a killed run.

const MiB = 1024 * 1024;
/**
 * The shims' multipart threshold is lowered for these cases (AIRLOCK_MULTIPART_THRESHOLD), so
 * files of tens of MiB prove what 64 MiB ones would: several 8 MiB parts, retries, resumes.
 */
const THRESHOLD = 24 * MiB;
/** Random bytes, sent as they are: 6 parts of 8 MiB, the last one short. */
const RANDOM_SIZE = 40 * MiB + 4321;
const PARTS = 6;
/** base64 text: gzip pays (about 3/4) yet the gzip stays above the threshold. */
const TEXT_SIZE = 40 * MiB;
const PART = 8 * MiB;

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

let base: string;
let randomPath: string;
let randomSha: string;
let textPath: string;
let textSha: string;

beforeAll(async () => {
  prepareShim();
  base = await mkdtemp(join(tmpdir(), "airlock-multipart-"));
  const random = randomBytes(RANDOM_SIZE);
  randomPath = join(base, "random.bin");
  randomSha = sha256(random);
  await writeFile(randomPath, random);
  const text = Buffer.from(randomBytes((TEXT_SIZE / 4) * 3).toString("base64"));
  textPath = join(base, "text.txt");
  textSha = sha256(text);
  await writeFile(textPath, text);
});

afterAll(async () => {
  if (base) await rm(base, { recursive: true, force: true });
});

describe("airlock send of a file above the multipart threshold", () => {
  let relay: FakeRelay;
  let cache: string;

  beforeEach(async () => {
    relay = await startFakeRelay();
    cache = await mkdtemp(join(base, "cache-"));
  });
  afterEach(async () => {
    await relay?.stop();
  });

  const env = (extra: Record<string, string> = {}) => ({
    ...relayEnv(relay.url, TOKEN),
    HOME: cache,
    XDG_CACHE_HOME: cache,
    AIRLOCK_MULTIPART_THRESHOLD: String(THRESHOLD),
    ...extra,
  });
  /** For a shim spawned here: the relay's generated types declare its vars on ProcessEnv. */
  const shimEnv = () =>
    ({ PATH: process.env.PATH ?? "/usr/bin:/bin", ...env() }) as unknown as NodeJS.ProcessEnv;
  const send = (path: string, extra?: Record<string, string>) =>
    runShim(["send", "--json", path], { env: env(extra), cwd: base });
  const sent = (result: ShimResult): SendResult => {
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as SendResult;
  };
  const stateDir = () => join(cache, "airlock", "uploads");
  const stateFiles = async () =>
    (await readdir(stateDir()).catch(() => [] as string[])).filter(
      (name) => name.endsWith(".json") && !name.startsWith("."),
    );
  const uploads = () => [...relay.multipart.values()];
  const onlyUpload = (): FakeMultipartUpload => {
    expect(uploads()).toHaveLength(1);
    return uploads()[0]!;
  };
  const stored = (result: SendResult) => sha256(relay.files.get(result.fileId)!.bytes);
  const putsOf = (n: number) => relay.parts.puts.filter((p) => p.partNumber === n);
  const missingBytes = (upload: FakeMultipartUpload) => {
    let bytes = 0;
    for (let n = 1; n <= upload.partSha256.length; n++) {
      if (!upload.held.has(n)) bytes += partLength(upload.storedSize, upload.partSize, n);
    }
    return bytes;
  };
  /** A copy of the random file of its own, for a test that changes it. */
  const copyOfRandom = async (name: string) => {
    const path = join(base, name);
    await copyFile(randomPath, path);
    return path;
  };
  /** A first run whose part 1 keeps failing: ends with exit 1 and the upload saved. */
  const failedRun = async (path: string) => {
    relay.failPart(1, 1000);
    const result = await send(path);
    expect(result.code).toBe(1);
    relay.failPart(1, 0);
    expect(await stateFiles()).toHaveLength(1);
    return onlyUpload();
  };

  it("sends a 40 MiB random file in 8 MiB parts, several at once, byte-exact", async () => {
    const result = sent(await send(randomPath));
    expect(result.sha256).toBe(randomSha);
    expect(stored(result)).toBe(randomSha);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE);
    const upload = onlyUpload();
    expect(upload.encoding).toBe("identity");
    expect(upload.partSize).toBe(PART);
    expect(upload.partSha256).toHaveLength(PARTS);
    const lengths = relay.parts.puts.map((p) => [p.partNumber, p.bytes, p.status]);
    expect(lengths.sort((a, b) => a[0]! - b[0]!)).toEqual(
      Array.from({ length: PARTS }, (_, i) => [
        i + 1,
        i < PARTS - 1 ? PART : RANDOM_SIZE - (PARTS - 1) * PART,
        200,
      ]),
    );
    expect(relay.parts.maxInFlight).toBeGreaterThanOrEqual(2);
    expect(relay.parts.maxInFlight).toBeLessThanOrEqual(4);
    expect(await stateFiles()).toEqual([]);
  });

  it("gzips a 40 MiB text file and, with AIRLOCK_UPLOAD_CONCURRENCY=1, sends one part at a time", async () => {
    const result = sent(await send(textPath, { AIRLOCK_UPLOAD_CONCURRENCY: "1" }));
    expect(stored(result)).toBe(textSha);
    const upload = onlyUpload();
    expect(upload.encoding).toBe("gzip");
    expect(upload.storedSize).toBeGreaterThan(THRESHOLD);
    expect(upload.storedSize).toBeLessThan(TEXT_SIZE);
    const count = partCount(upload.storedSize, PART);
    expect(upload.partSha256).toHaveLength(count);
    expect(relay.parts.puts.map((p) => p.bytes)).toEqual(
      Array.from({ length: count }, (_, i) => partLength(upload.storedSize, PART, i + 1)),
    );
    expect(relay.parts.maxInFlight).toBe(1);
    expect(result.uploadedBytes).toBe(upload.storedSize);
  });

  it("refuses an AIRLOCK_UPLOAD_CONCURRENCY out of range before sending anything", async () => {
    const result = await send(randomPath, { AIRLOCK_UPLOAD_CONCURRENCY: "17" });
    expect(result.code).toBe(2);
    expect(failureLine(result)).toMatch(
      /AIRLOCK_UPLOAD_CONCURRENCY must be an integer from 1 to 16/,
    );
    expect(relay.calls).toEqual([]);
  });

  it("retries a part that fails twice with 503, and sends only that part again", async () => {
    relay.failPart(3, 2);
    const result = sent(await send(randomPath));
    expect(stored(result)).toBe(randomSha);
    expect(putsOf(3).map((p) => p.status)).toEqual([503, 503, 200]);
    for (let n = 1; n <= PARTS; n++) if (n !== 3) expect(putsOf(n)).toHaveLength(1);
    expect(relay.parts.bytesReceived).toBe(RANDOM_SIZE + 2 * PART);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE);
  });

  it("ends with one stderr line when a part keeps failing, keeps the upload, and resumes it", async () => {
    relay.failPart(2, 1000);
    relay.stallPart(3); // in flight when part 2 gives up: dropped, not waited for
    // A stalled part is never answered: had the shim waited for it, it would still be waiting.
    const first = await send(randomPath);
    expect(first.code).toBe(1);
    expect(failureLine(first)).toMatch(
      /^airlock: storage error during upload of random\.bin \(part 2 of 6\): ServiceUnavailable.*\(after 3 attempts\)$/,
    );
    expect(first.stdout).toBe("");
    expect(putsOf(2)).toHaveLength(3);
    // The stalled part 3 was dropped by the shim (its connection closed unanswered).
    const deadline = Date.now() + 10_000;
    while (!putsOf(3).some((p) => p.status === 0) && Date.now() < deadline) await sleep(20);
    expect(putsOf(3).map((p) => p.status)).toContain(0);
    expect(relay.routes().filter((r) => r.endsWith("/complete"))).toEqual([]);
    const upload = onlyUpload();
    const [state] = await stateFiles();
    const saved = JSON.parse(await readFile(join(stateDir(), state!), "utf8")) as {
      uploadId: string;
      path: string;
    };
    expect(saved.uploadId).toBe(upload.uploadId);
    expect(saved.path).toBe(randomPath);

    relay.failPart(2, 0);
    relay.stallPart(3, false);
    const missing = missingBytes(upload);
    const received = relay.parts.bytesReceived;
    const result = sent(await send(randomPath));
    expect(relay.routes()).toContain(`GET /v1/uploads/${upload.uploadId}`);
    expect(uploads()).toHaveLength(1); // resumed, not declared anew
    expect(result.uploadedBytes).toBe(missing);
    expect(relay.parts.bytesReceived - received).toBe(missing);
    expect(stored(result)).toBe(randomSha);
    expect(await stateFiles()).toEqual([]);
  });

  it("stops with one line when the file changes while its parts go up", async () => {
    const path = await copyOfRandom("growing.bin");
    let changed = false;
    relay.onPartBytes(() => {
      if (changed) return;
      changed = true;
      // Same size, so only the last part's digest can tell.
      const handle = openSync(path, "r+");
      writeSync(handle, Buffer.from("changed"), 0, 7, RANDOM_SIZE - 100);
      closeSync(handle);
    });
    const result = await send(path, { AIRLOCK_UPLOAD_CONCURRENCY: "2" });
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe(
      "airlock: growing.bin changed while it was being sent; send it again once it is complete",
    );
    expect(putsOf(PARTS).filter((p) => p.status === 200)).toEqual([]);
  });

  it("after a SIGKILL half-way, sends again only the parts the store does not hold", async () => {
    // Two parts in flight: a kill at half the bytes leaves parts held as well as missing.
    const child = spawn(process.execPath, [SHIM, "send", "--json", randomPath], {
      cwd: base,
      env: { ...shimEnv(), AIRLOCK_UPLOAD_CONCURRENCY: "2" },
      stdio: "ignore",
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once("close", (_code, signal) => resolve(signal)),
    );
    relay.onPartBytes((total) => {
      if (total >= RANDOM_SIZE / 2) child.kill("SIGKILL");
    });
    expect(await exited).toBe("SIGKILL");
    relay.onPartBytes(undefined);
    const deadline = Date.now() + 10_000;
    while (relay.parts.inFlight > 0 && Date.now() < deadline) await sleep(20);
    expect(relay.parts.inFlight).toBe(0);
    const upload = onlyUpload();
    const missing = missingBytes(upload);
    expect(upload.held.size).toBeGreaterThan(0);
    expect(missing).toBeGreaterThan(0);
    expect(await stateFiles()).toHaveLength(1);

    const received = relay.parts.bytesReceived;
    const result = sent(await send(randomPath));
    expect(uploads()).toHaveLength(1);
    expect(relay.parts.bytesReceived - received).toBeLessThanOrEqual(missing + PART);
    expect(result.uploadedBytes).toBe(missing);
    expect(stored(result)).toBe(randomSha);
    expect(await stateFiles()).toEqual([]);
  });

  it("reports the file when a killed run had completed the upload but not forgotten it", async () => {
    const child = spawn(process.execPath, [SHIM, "send", "--json", randomPath], {
      cwd: base,
      env: shimEnv(),
      stdio: "ignore",
    });
    const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
    // Killed as it asks to complete: the relay completes all the same.
    relay.onCall((call) => {
      if (call.path.endsWith("/complete")) child.kill("SIGKILL");
    });
    await exited;
    relay.onCall(undefined);
    expect(onlyUpload().file).toBeDefined();
    expect(await stateFiles()).toHaveLength(1);

    const puts = relay.parts.puts.length;
    const result = sent(await send(randomPath));
    expect(result.fileId).toBe(onlyUpload().file!.fileId);
    expect(result.uploadedBytes).toBe(0);
    expect(relay.parts.puts).toHaveLength(puts);
    expect(await stateFiles()).toEqual([]);
  });

  it("uploads afresh a file changed between runs, even with its size and mtime kept", async () => {
    const path = await copyOfRandom("changing.bin");
    const mtime = new Date("2024-05-01T12:00:00Z");
    await utimes(path, mtime, mtime);
    const first = await failedRun(path);

    const handle = await open(path, "r+");
    await handle.write(randomBytes(MiB), 0, MiB, 20 * MiB);
    await handle.close();
    await utimes(path, mtime, mtime);
    const changedSha = sha256(await readFile(path));

    const result = sent(await send(path));
    expect(relay.routes().some((r) => r.startsWith("GET /v1/uploads/"))).toBe(false);
    expect(uploads()).toHaveLength(2);
    const second = uploads().find((u) => u !== first)!;
    expect(second.sha256).toBe(changedSha);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE);
    expect(stored(result)).toBe(changedSha);
    expect(await stateFiles()).toEqual([]); // the stale entry went too
  });

  it("uploads afresh when the relay has forgotten the saved upload (404)", async () => {
    const first = await failedRun(randomPath);
    relay.forgetUpload(first.uploadId);
    const result = sent(await send(randomPath));
    expect(relay.routes()).toContain(`GET /v1/uploads/${first.uploadId}`);
    expect(uploads()).toHaveLength(1); // the forgotten one is gone from the map
    expect(uploads()[0]!.uploadId).not.toBe(first.uploadId);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE);
    expect(stored(result)).toBe(randomSha);
    expect(await stateFiles()).toEqual([]);
  });

  it("ignores a saved upload two days old", async () => {
    const first = await failedRun(randomPath);
    const [name] = await stateFiles();
    const file = join(stateDir(), name!);
    const saved = JSON.parse(await readFile(file, "utf8")) as { createdAt: string };
    saved.createdAt = new Date(Date.now() - 49 * 3_600_000).toISOString();
    await writeFile(file, JSON.stringify(saved));

    const result = sent(await send(randomPath));
    expect(relay.routes().some((r) => r.startsWith("GET /v1/uploads/"))).toBe(false);
    expect(uploads()).toHaveLength(2);
    expect(uploads().some((u) => u !== first && u.file)).toBe(true);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE);
    expect(await stateFiles()).toEqual([]);
  });

  it("sends a part again when complete finds it missing, then completes", async () => {
    let dropped = false;
    relay.onCall((call) => {
      const m = /^\/v1\/uploads\/([^/]+)\/complete$/.exec(call.path);
      if (m && !dropped) {
        dropped = true;
        relay.dropPart(m[1]!, 5);
      }
    });
    const result = sent(await send(randomPath));
    expect(relay.routes().filter((r) => r.endsWith("/complete"))).toHaveLength(2);
    expect(putsOf(5).map((p) => p.status)).toEqual([200, 200]);
    expect(result.uploadedBytes).toBe(RANDOM_SIZE + PART);
    expect(stored(result)).toBe(randomSha);
  });

  it("sends a directory whose archive is above the threshold in parts", async () => {
    const dir = join(base, "tree");
    await mkdir(dir, { recursive: true });
    await copyFile(randomPath, join(dir, "random.bin"));
    const result = sent(await send(dir));
    expect(result.archive).toBe(true);
    const upload = onlyUpload();
    expect(upload.name).toBe("tree.tar.gz");
    expect(upload.partSha256).toHaveLength(partCount(upload.storedSize, PART));
    expect(result.uploadedBytes).toBe(upload.storedSize);
    expect(relay.files.get(result.fileId)!.size).toBe(upload.storedSize);
  });
});
