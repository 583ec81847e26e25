import { createHash, randomBytes } from "node:crypto";
import { copyFile, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, expect } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { partLength } from "../../src/part-plan";
import { TOKEN, startFakeRelay, type FakeMultipartUpload, type FakeRelay } from "./fake-relay";
import { prepareShim, runShim, relayEnv, type ShimResult } from "./run-shim";

// `airlock send` of files above the multipart threshold against the fake relay (a store that
// fails, stalls, loses or forgets parts and counts them in flight): the shared set-up of
// multipart.test.ts and multipart-resume.test.ts.

export const MiB = 1024 * 1024;
/**
 * The shims' multipart threshold is lowered for these cases (AIRLOCK_MULTIPART_THRESHOLD), so
 * files of tens of MiB prove what 64 MiB ones would: several 8 MiB parts, retries, resumes.
 */
export const THRESHOLD = 24 * MiB;
/** Random bytes, sent as they are: 6 parts of 8 MiB, the last one short. */
export const RANDOM_SIZE = 40 * MiB + 4321;
export const PARTS = 6;
/** base64 text: gzip pays (about 3/4) yet the gzip stays above the threshold. */
export const TEXT_SIZE = 40 * MiB;
export const PART = 8 * MiB;

export const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** The files a multipart test file sends, made once in its `beforeAll`. */
export interface MultipartFiles {
  base: string;
  randomPath: string;
  randomSha: string;
  textPath: string;
  textSha: string;
}

/** Makes the random file (and, with `text`, the text file) once for the calling test file. */
export function multipartFiles(text: boolean): MultipartFiles {
  const files = {} as MultipartFiles;
  beforeAll(async () => {
    prepareShim();
    files.base = await mkdtemp(join(tmpdir(), "airlock-multipart-"));
    const random = randomBytes(RANDOM_SIZE);
    files.randomPath = join(files.base, "random.bin");
    files.randomSha = sha256(random);
    await writeFile(files.randomPath, random);
    if (!text) return;
    const bytes = Buffer.from(randomBytes((TEXT_SIZE / 4) * 3).toString("base64"));
    files.textPath = join(files.base, "text.txt");
    files.textSha = sha256(bytes);
    await writeFile(files.textPath, bytes);
  });
  afterAll(async () => {
    if (files.base) await rm(files.base, { recursive: true, force: true });
  });
  return files;
}

/** A fresh fake relay and upload-state cache per test, and what the cases read of them. */
export function fakeMultipart(files: MultipartFiles) {
  const ctx = { relay: undefined as unknown as FakeRelay, cache: "" };
  beforeEach(async () => {
    ctx.relay = await startFakeRelay();
    ctx.cache = await mkdtemp(join(files.base, "cache-"));
  });
  afterEach(async () => {
    await ctx.relay?.stop();
  });

  const env = (extra: Record<string, string> = {}) => ({
    ...relayEnv(ctx.relay.url, TOKEN),
    HOME: ctx.cache,
    XDG_CACHE_HOME: ctx.cache,
    AIRLOCK_MULTIPART_THRESHOLD: String(THRESHOLD),
    ...extra,
  });
  const stateDir = () => join(ctx.cache, "airlock", "uploads");
  const uploads = () => [...ctx.relay.multipart.values()];
  const send = (path: string, extra?: Record<string, string>) =>
    runShim(["send", "--json", path], { env: env(extra), cwd: files.base });
  const stateFiles = async () =>
    (await readdir(stateDir()).catch(() => [] as string[])).filter(
      (name) => name.endsWith(".json") && !name.startsWith("."),
    );
  const onlyUpload = (): FakeMultipartUpload => {
    expect(uploads()).toHaveLength(1);
    return uploads()[0]!;
  };
  return {
    get relay() {
      return ctx.relay;
    },
    env,
    /** For a shim spawned by the test: the relay's generated types declare its vars on ProcessEnv. */
    shimEnv: () =>
      ({ PATH: process.env.PATH ?? "/usr/bin:/bin", ...env() }) as unknown as NodeJS.ProcessEnv,
    send,
    sent(result: ShimResult): SendResult {
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as SendResult;
    },
    stateDir,
    stateFiles,
    uploads,
    onlyUpload,
    stored: (result: SendResult) => sha256(ctx.relay.files.get(result.fileId)!.bytes),
    putsOf: (n: number) => ctx.relay.parts.puts.filter((p) => p.partNumber === n),
    missingBytes(upload: FakeMultipartUpload) {
      let bytes = 0;
      for (let n = 1; n <= upload.partSha256.length; n++) {
        if (!upload.held.has(n)) bytes += partLength(upload.storedSize, upload.partSize, n);
      }
      return bytes;
    },
    /** A copy of the random file of its own, for a test that changes it. */
    async copyOfRandom(name: string) {
      const path = join(files.base, name);
      await copyFile(files.randomPath, path);
      return path;
    },
    /** A first run whose part 1 keeps failing: ends with exit 1 and the upload saved. */
    async failedRun(path: string) {
      ctx.relay.failPart(1, 1000);
      const result = await send(path);
      expect(result.code).toBe(1);
      ctx.relay.failPart(1, 0);
      expect(await stateFiles()).toHaveLength(1);
      return onlyUpload();
    },
  };
}
