import { spawn } from "node:child_process";
import { createHash, randomFillSync } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { partLength, partSizeFor } from "../../src/part-plan";
import type { MultipartAnswer } from "../../src/wire-types";
import { startFaultProxy, type FaultProxy, type ProxiedRequest } from "../fixtures/fault-proxy";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { prepareShim, runShim, SHIM } from "../shim/run-shim";
import { startRelay, type RunningRelay } from "../support/relay";
import { sharedRelay } from "../support/shared-relay";
import { s3Vars } from "../support/s3-vars";

/**
 * A send killed half-way, then run again. 40 MiB is 5 parts of 8 MiB, sent in parts because the
 * shim is given a lower threshold (AIRLOCK_MULTIPART_THRESHOLD; 64 MiB by default): enough to
 * kill with parts both held and missing and several in flight, as 128 or 256 MiB did.
 */
const FILE_BYTES = 40 * 1024 * 1024;
const MULTIPART_THRESHOLD = 24 * 1024 * 1024;
const PART_BYTES = partSizeFor(FILE_BYTES);
const PARTS = Math.ceil(FILE_BYTES / PART_BYTES);

interface Backend {
  name: string;
  /** The proxy every part PUT goes through, counting its bytes. */
  proxy: FaultProxy;
  relay: RunningRelay;
  /** Where the shim finds the relay. */
  shimUrl: string;
  /** Whether a proxied request is a part PUT. */
  isPartPut(request: ProxiedRequest): boolean;
  /** The part number a part PUT carries. */
  partNumberOf(request: ProxiedRequest): number;
  /** SHA-256 of the sent file's bytes as a reader gets them. */
  servedSha256(result: { url: string; sha256: string }): Promise<string>;
  stop(): Promise<void>;
}

let work: string;
let file: { path: string; sha256: string };

/** FILE_BYTES of random bytes (so identity encoding), written in 8 MiB slices. */
async function writeRandomFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  const out = createWriteStream(path);
  const slice = Buffer.alloc(8 * 1024 * 1024);
  for (let written = 0; written < FILE_BYTES; written += slice.length) {
    randomFillSync(slice);
    hash.update(slice);
    if (!out.write(slice)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
  }
  await new Promise<void>((resolve, reject) =>
    out.end((err?: Error | null) => (err ? reject(err) : resolve())),
  );
  return hash.digest("hex");
}

function shimEnv(relayUrl: string, token: string, cache: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: work,
    AIRLOCK_URL: relayUrl,
    AIRLOCK_TOKEN: token,
    AIRLOCK_RETRY_BASE_MS: "10",
    AIRLOCK_MULTIPART_THRESHOLD: String(MULTIPART_THRESHOLD),
    // Two parts in flight at once: a kill at half the bytes leaves parts held, in flight and unsent.
    AIRLOCK_UPLOAD_CONCURRENCY: "2",
    XDG_CACHE_HOME: cache,
  };
}

/** Bytes of part PUTs the store accepted, from the proxy's log starting at `from`. */
function acceptedPartBytes(backend: Backend, from = 0): number {
  return backend.proxy.requests
    .slice(from)
    .filter((r) => backend.isPartPut(r) && r.status === 200)
    .reduce((sum, r) => sum + r.requestBytes, 0);
}

/**
 * The parts PUT from `from` on, each once however often it was tried: on a busy machine a part
 * may be retried (a 5xx, a cut connection), which is not a re-send of a part the store holds.
 */
function partsPut(backend: Backend, from = 0): number[] {
  const parts = backend.proxy.requests
    .slice(from)
    .filter((r) => backend.isPartPut(r))
    .map((r) => backend.partNumberOf(r));
  return [...new Set(parts)].sort((a, b) => a - b);
}

/** Starts `airlock send` and SIGKILLs it once the store accepted half the bytes. */
async function sendKilledHalfway(backend: Backend, env: Record<string, string>): Promise<void> {
  const child = spawn(process.execPath, [SHIM, "send", "--json", file.path], {
    env: env as NodeJS.ProcessEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  child.stdout.resume();
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once("close", (_code, signal) => resolve(signal)),
  );
  // Generous: on a busy machine workerd and the store get a fraction of a core each.
  const deadline = Date.now() + 150_000;
  while (acceptedPartBytes(backend) < FILE_BYTES / 2) {
    if (child.exitCode !== null)
      throw new Error(
        `the send ended before it could be killed: ${stderr} ${JSON.stringify(backend.proxy.requests.slice(-5))}`,
      );
    if (Date.now() > deadline) throw new Error("the send did not get half-way in 150 s");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  child.kill("SIGKILL");
  expect(await exited).toBe("SIGKILL");
}

/**
 * A part whose last byte left before the kill may still land (the store answers once it has
 * the whole body, and the proxy may have dropped that answer): wait until the proxy's log and
 * the relay's list of missing parts have both stopped changing for a second, and return that list.
 */
async function settled(backend: Backend, token: string, uploadId: string): Promise<number[]> {
  const snapshot = async () => {
    const parts = await missingParts(backend.relay.url, token, uploadId);
    const log = backend.proxy.requests
      .filter((r) => backend.isPartPut(r))
      .map((r) => `${r.status}:${r.requestBytes}`)
      .join();
    return { parts, key: `${log}|${parts.join()}` };
  };
  const deadline = Date.now() + 60_000;
  let last = await snapshot();
  let stableSince = Date.now();
  while (Date.now() - stableSince < 1_000) {
    if (Date.now() > deadline) throw new Error("the killed send's parts did not settle in 60 s");
    await new Promise((resolve) => setTimeout(resolve, 100));
    const next = await snapshot();
    if (next.key !== last.key) stableSince = Date.now();
    last = next;
  }
  return last.parts;
}

/** The upload the killed run left, as its state file names it. */
async function savedUploadId(cache: string): Promise<string> {
  const dir = join(cache, "airlock", "uploads");
  const names = (await readdir(dir)).filter((name) => name.endsWith(".json"));
  expect(names).toHaveLength(1);
  const saved = JSON.parse(await readFile(join(dir, names[0]!), "utf8")) as { uploadId: string };
  return saved.uploadId;
}

/** The parts the store does not hold, as the relay reports them. */
async function missingParts(relayUrl: string, token: string, uploadId: string): Promise<number[]> {
  const response = await fetch(`${relayUrl}/v1/uploads/${uploadId}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(response.status).toBe(200);
  const state = (await response.json()) as MultipartAnswer;
  expect(state.status).toBe("multipart");
  expect(state.partSize).toBe(PART_BYTES);
  // An upload declared with hashAtComplete lists its missing parts by number (docs/api.md).
  return state.missing ?? state.parts.map((part) => part.partNumber);
}

async function sha256Of(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return sha256OfStream(response.body as unknown as AsyncIterable<Uint8Array>);
}

async function sha256OfStream(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of chunks) hash.update(chunk);
  return hash.digest("hex");
}

beforeAll(async () => {
  prepareShim();
  work = await mkdtemp(join(tmpdir(), "airlock-resume-"));
  const path = join(work, "weights.bin");
  file = { path, sha256: await writeRandomFile(path) };
}, 60_000);
afterAll(() => rm(work, { recursive: true, force: true }));

const backends: Array<[string, () => Promise<Backend>]> = [
  [
    "r2 (parts through the relay)",
    async () => {
      const relay = sharedRelay();
      // Keeping the proxy's Host makes the relay sign its part URLs for the proxy.
      const proxy = await startFaultProxy({ target: relay.url, host: "preserve" });
      return {
        name: "r2",
        proxy,
        relay,
        shimUrl: proxy.url,
        isPartPut: (r) => r.method === "PUT" && /^\/v1\/blob-uploads\/[^/]+\/parts\//.test(r.path),
        partNumberOf: (r) => Number(/\/parts\/(\d+)/.exec(r.path)?.[1]),
        servedSha256: (result) => sha256Of(result.url),
        stop: async () => {
          await proxy.stop();
          await relay.stop();
        },
      };
    },
  ],
  [
    "s3 (presigned UploadPart straight to the store)",
    async () => {
      const s3: StrictS3 = await startStrictS3();
      const proxy = await startFaultProxy({ target: s3.endpoint, host: "preserve" });
      const relay = await startRelay({
        storage: "s3",
        vars: s3Vars(s3, proxy.url),
      });
      return {
        name: "s3",
        proxy,
        relay,
        shimUrl: relay.url,
        // An UploadPart, not the verify queue's CopyObject onto the content key (a PUT too).
        isPartPut: (r) =>
          r.method === "PUT" && r.partNumber !== null && r.path.startsWith(`/${s3.bucket}/blobs/`),
        partNumberOf: (r) => r.partNumber ?? Number.NaN,
        // Straight from the store: under wrangler dev the Worker's fetch of a loopback Node
        // server streams large bodies slowly (a 256 MiB share-link read through the relay
        // did not finish in 3 minutes here), so the bytes are read with the AWS SDK.
        servedSha256: async (result) => {
          // Its upload's own key until the verify queue moves it onto its content key; an
          // upload declared with hashAtComplete has one that names no content (docs/api.md).
          // The queue joins the parts first: the object appears once it has.
          let key: string | undefined;
          for (let waited = 0; !key && waited < 30_000; waited += 200) {
            if (waited > 0) await new Promise((resolve) => setTimeout(resolve, 200));
            const keys = await s3.listKeys("blobs/");
            key =
              keys.find((k) => k.includes(result.sha256)) ??
              keys.find((k) => k.startsWith("blobs/deferred/"));
          }
          if (!key) throw new Error("no object for the file after 30 s");
          const client = new S3Client({
            endpoint: s3.endpoint,
            region: s3.region,
            forcePathStyle: true,
            credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
          });
          const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
          return sha256OfStream(object.Body as AsyncIterable<Uint8Array>);
        },
        stop: async () => {
          await relay.stop();
          await proxy.stop();
          await s3.stop();
        },
      };
    },
  ],
];

describe.each(backends)("a send killed half-way resumes on %s", (_, start) => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await start();
  }, 240_000);
  afterAll(() => backend?.stop());

  it("re-sends only the parts the store lacks, and the file is byte-exact", async () => {
    const { relay } = backend;
    const session = await relay.mintSession();
    const cache = await mkdtemp(join(work, `cache-${backend.name}-`));
    const env = shimEnv(backend.shimUrl, session.token, cache);

    await sendKilledHalfway(backend, env);
    const uploadId = await savedUploadId(cache);
    const missing = await settled(backend, session.token, uploadId);
    expect(missing.length).toBeGreaterThan(0);
    expect(missing.length).toBeLessThan(PARTS);
    const missingBytes = missing.reduce((sum, n) => sum + partLength(FILE_BYTES, PART_BYTES, n), 0);

    const before = backend.proxy.requests.length;
    const rerun = await runShim(["send", "--json", file.path], { env, timeoutMs: 240_000 });
    expect(rerun.stderr).not.toMatch(/^airlock: /m);
    expect(rerun.code, rerun.stderr).toBe(0);
    const result = JSON.parse(rerun.stdout.trim().split("\n").pop()!) as {
      sha256: string;
      url: string;
      uploadedBytes: number;
      deduped: boolean;
    };

    expect(partsPut(backend, before)).toEqual([...missing].sort((a, b) => a - b));
    expect(result.uploadedBytes).toBe(missingBytes);
    expect(result.deduped).toBe(false);
    expect(result.sha256).toBe(file.sha256);
    expect(await backend.servedSha256(result)).toBe(file.sha256);
    // The state file goes once the upload is complete.
    expect(await readdir(join(cache, "airlock", "uploads"))).toEqual([]);
    // ~15-20 s idle; the timeouts are sized for a 2-core machine also running another suite,
    // where the relay (workerd) and the store each get a fraction of a core.
  }, 420_000);
});
