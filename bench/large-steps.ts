/**
 * Where a large send's time goes, step by step, done by hand the way the shim does it: a fresh
 * node process hashes the file whole while a worker takes its part digests (the shim's first
 * pass, start-up included), the probe and the multipart declaration, the part PUTs by `curl
 * --parallel`, then `complete` (the store assembles the parts).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { WORKER_SOURCE } from "../agent-shim/src/upload/part-digests-aside";
import { partSizeFor } from "../src/part-plan";
import { curlPartsConfig, cutParts } from "./baselines";
import type { Meter } from "./measure";
import { complete, declareMultipart, describe, type Original, type Session } from "./relay-api";

/** Milliseconds per step of one send. */
export interface Steps {
  hash: number;
  declare: number;
  put: number;
  complete: number;
}

/**
 * The shim's first pass in a node process of its own: the whole file's SHA-256 here, its part
 * digests on a worker running the shim's own worker source (`PART_DIGESTS_WORKER`).
 */
const FIRST_PASS = `
const { createHash } = require("node:crypto");
const { Worker } = require("node:worker_threads");
const [path, partSize] = [process.argv[1], Number(process.argv[2])];
const parts = new Promise((resolve, reject) =>
  new Worker(process.env.PART_DIGESTS_WORKER, { eval: true, workerData: { path, partSize } })
    .once("message", resolve)
    .once("error", reject));
const whole = createHash("sha256");
require("node:fs").createReadStream(path)
  .on("data", (chunk) => whole.update(chunk))
  .on("end", async () => console.log(whole.digest("hex"), (await parts).length));
`;

export async function sendBySteps(
  meter: Meter,
  session: Session,
  path: string,
  tmpDir: string,
  inFlight: number,
): Promise<Steps> {
  const file = await describe(path, "application/octet-stream");
  const partSize = partSizeFor(file.size);
  const hash = await meter.run(process.execPath, ["-e", FIRST_PASS, path, String(partSize)], {
    env: { ...process.env, PART_DIGESTS_WORKER: WORKER_SOURCE },
  });

  // Part files and their digests are made untimed: the timed hash above stands for them.
  const dir = await mkdtemp(join(tmpDir, "steps-"));
  try {
    const { partFiles, partSha256 } = await cutParts(path, file.size, partSize, dir);
    let started = performance.now();
    await probe(session, file);
    const upload = await declareMultipart(session, file, partSha256);
    const declare = performance.now() - started;

    const config = curlPartsConfig(upload.parts, partFiles);
    const configFile = join(dir, "curl.conf");
    await writeFile(configFile, config.join("\n"));
    const put = await meter.run("curl", [
      ...["-sS", "-f", "--parallel", "--parallel-max", String(inFlight)],
      ...["-K", configFile],
    ]);

    started = performance.now();
    await complete(session, upload.uploadId);
    return { hash: hash.wallMs, declare, put: put.wallMs, complete: performance.now() - started };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The shim's first request for a file: `POST /v1/uploads` with the original fields only. */
async function probe(session: Session, file: Original): Promise<void> {
  const response = await fetch(`${session.url}/v1/uploads`, {
    method: "POST",
    headers: { authorization: `Bearer ${session.token}`, "content-type": "application/json" },
    body: JSON.stringify(file),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`probe: ${response.status} ${text}`);
}
