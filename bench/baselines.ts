import { createHash } from "node:crypto";
import { mkdtemp, open, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { partSizeFor } from "../src/part-plan";
import type { Measured, Meter } from "./measure";
import {
  complete,
  declareMultipart,
  declareUpload,
  describe,
  probeCurlArgs,
  type Original,
  type PutInstructions,
  type Session,
} from "./relay-api";

/**
 * The floor: `curl -T` of the file's bytes to the presigned URL the relay hands out for an identity
 * upload, with exactly the signed headers. Only the PUT is timed; hashing, declaring and completing
 * are not.
 * `Expect:` is cleared so that curl does not wait for a `100 Continue` before sending the body.
 */
export function curlPut(
  meter: Meter,
  session: Session,
  path: string,
  contentType: string,
  warn: (message: string) => void,
): Promise<Measured & { bytesSent: number }> {
  return timedPut(session, path, contentType, warn, "curl", (put) => curlTo(meter, put, path));
}

/** Declares `path` (untimed), PUTs it to its presigned URL with `by` (timed), completes (untimed). */
async function timedPut(
  session: Session,
  path: string,
  contentType: string,
  warn: (message: string) => void,
  who: string,
  by: (put: PutInstructions) => Promise<Measured>,
): Promise<Measured & { bytesSent: number }> {
  const file = await describe(path, contentType);
  const { uploadId, put } = await declareUpload(session, file);
  const run = await by(put);
  await complete(session, uploadId, (message) => warn(`untimed complete after ${who}: ${message}`));
  return { ...run, bytesSent: file.size };
}

/** `curl -T path` to a signed PUT with exactly its headers (and `Expect:` cleared). */
export function curlTo(meter: Meter, put: PutInstructions, path: string): Promise<Measured> {
  const headers = Object.entries(put.headers).flatMap(([name, value]) => [
    "-H",
    `${name}: ${value}`,
  ]);
  const args = ["-sS", "-f", "-o", "/dev/null", "-X", put.method, "-T", path, "-H", "Expect:"];
  return meter.run("curl", [...args, ...headers, put.url]);
}

// The same PUT as curlTo's, by node:http in a fresh process: what any Node client pays beyond
// `node -e 0` (the http module's load, the request) with none of the shim's own work.
const NODE_PUT = `
const { method, url, headers } = JSON.parse(process.argv[2]);
const body = require("node:fs").readFileSync(process.argv[1]);
const request = require("node:http").request(url, { method, headers: { ...headers, "content-length": body.length } }, (response) => {
  response.resume();
  if (response.statusCode >= 300) process.exitCode = 1;
});
request.on("error", (error) => { console.error(error.message); process.exitCode = 1; });
request.end(body);
`;

/** `nodePut`: the floor under any Node client, the presigned PUT of `curlPut` from a bare script. */
export function nodePut(
  meter: Meter,
  session: Session,
  path: string,
  contentType: string,
  warn: (message: string) => void,
): Promise<Measured & { bytesSent: number }> {
  return timedPut(session, path, contentType, warn, "node", (put) =>
    meter.run(process.execPath, ["-e", NODE_PUT, path, JSON.stringify(put)]),
  );
}

/**
 * curl making the shim's one request for an identity file (`POST /v1/single-uploads`, the
 * declaration in the query): the relay's cost of that route against a presigned PUT's.
 */
export async function curlSingleUpload(
  meter: Meter,
  session: Session,
  path: string,
  contentType: string,
): Promise<Measured & { bytesSent: number }> {
  const file = await describe(path, contentType);
  const query = new URLSearchParams({
    name: file.name,
    size: String(file.size),
    sha256: file.sha256,
    contentType,
    encoding: "identity",
    storedSha256: file.sha256,
  });
  const args = ["-sS", "-f", "-o", "/dev/null", "-X", "POST", "--data-binary", `@${path}`];
  const headers = ["-H", `authorization: Bearer ${session.token}`, "-H", "Expect:"];
  const url = `${session.url}/v1/single-uploads?${query}`;
  const run = await meter.run("curl", [
    ...args,
    ...headers,
    "-H",
    `content-type: ${contentType}`,
    url,
  ]);
  return { ...run, bytesSent: file.size };
}

// The shim's one request from a bare script in a fresh process: it reads the file whole, hashes
// it and POSTs it with its declaration, none of the shim's other work (sniffing, gzip's
// trial, the sent cache, retries, its output line). The floor under any Node client that
// sends a small file the way issue 14 asks: in one request through the relay.
const NODE_SINGLE_UPLOAD = `
const [path, url, token, contentType] = process.argv.slice(1);
const body = require("node:fs").readFileSync(path);
const crypto = require("node:crypto");
const sha256 = crypto.createHash("sha256").update(body).digest("hex");
const query = new URLSearchParams({ name: require("node:path").basename(path), size: String(body.length), sha256, contentType, encoding: "identity", storedSha256: sha256 });
const headers = { authorization: "Bearer " + token, "content-type": "application/octet-stream", "content-length": body.length, "idempotency-key": crypto.randomUUID() };
const request = require("node:http").request(url + "/v1/single-uploads?" + query, { method: "POST", headers }, (response) => {
  response.resume();
  if (response.statusCode !== 201) { console.error("status " + response.statusCode); process.exitCode = 1; }
});
request.on("error", (error) => { console.error(error.message); process.exitCode = 1; });
request.end(body);
`;

/** `NODE_SINGLE_UPLOAD` for an identity file: what the one request costs any Node client. */
export async function nodeSingleUpload(
  meter: Meter,
  session: Session,
  path: string,
  contentType: string,
): Promise<Measured & { bytesSent: number }> {
  const args = ["-e", NODE_SINGLE_UPLOAD, path, session.url, session.token, contentType];
  const run = await meter.run(process.execPath, args);
  return { ...run, bytesSent: (await stat(path)).size };
}

/** Hashing alone, as the dedup baseline: GNU `sha256sum`. */
export function sha256sum(meter: Meter, path: string): Promise<Measured> {
  return meter.run("sha256sum", [path]);
}

const NODE_HASH = `
const { createHash } = require("node:crypto");
const hash = createHash("sha256");
require("node:fs").createReadStream(process.argv[1])
  .on("data", (chunk) => hash.update(chunk))
  .on("end", () => console.log(hash.digest("hex")));
`;

/** Hashing alone in a fresh node process (node's start-up included, as the shim pays it). */
export function nodeHash(meter: Meter, path: string): Promise<Measured> {
  return meter.run(process.execPath, ["-e", NODE_HASH, path]);
}

/** One `POST /v1/uploads` dedup probe by curl: a request's cost, start-up and connect included. */
export function probeRequest(meter: Meter, session: Session, file: Original): Promise<Measured> {
  return meter.run("curl", probeCurlArgs(session, file));
}

/**
 * The parts baseline: the file cut into part files (untimed), declared as a multipart upload
 * (untimed), then one `curl --parallel` process PUTs every part to its signed URL with exactly
 * its headers, `inFlight` at a time (timed), then complete (untimed).
 */
export async function curlParts(
  meter: Meter,
  session: Session,
  path: string,
  tmpDir: string,
  inFlight: number,
  warn: (message: string) => void,
): Promise<Measured & { bytesSent: number }> {
  const file = await describe(path, "application/octet-stream");
  const partSize = partSizeFor(file.size);
  const dir = await mkdtemp(join(tmpDir, "parts-"));
  try {
    const { partFiles, partSha256 } = await cutParts(path, file.size, partSize, dir);
    const upload = await declareMultipart(session, file, partSha256);
    const config = curlPartsConfig(upload.parts, partFiles);
    const configFile = join(dir, "curl.conf");
    await writeFile(configFile, config.join("\n"));
    const run = await meter.run("curl", [
      ...["-sS", "-f", "--parallel", "--parallel-max", String(inFlight)],
      ...["-K", configFile],
    ]);
    await complete(session, upload.uploadId, (m) => warn(`untimed complete after curl: ${m}`));
    return { ...run, bytesSent: file.size };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `path` cut into part files of `partSize` in `dir`, with each part's SHA-256. */
export async function cutParts(
  path: string,
  size: number,
  partSize: number,
  dir: string,
): Promise<{ partFiles: string[]; partSha256: string[] }> {
  const partFiles: string[] = [];
  const partSha256: string[] = [];
  const source = await open(path, "r");
  try {
    const buffer = Buffer.alloc(partSize);
    for (let n = 1; (n - 1) * partSize < size; n++) {
      const { bytesRead } = await source.read(buffer, 0, partSize, (n - 1) * partSize);
      const bytes = buffer.subarray(0, bytesRead);
      const partFile = join(dir, `part-${n}`);
      await writeFile(partFile, bytes);
      partFiles.push(partFile);
      partSha256.push(createHash("sha256").update(bytes).digest("hex"));
    }
  } finally {
    await source.close();
  }
  return { partFiles, partSha256 };
}

/** A `curl -K` config that PUTs each part file to its signed URL with its signed headers. */
export function curlPartsConfig(
  parts: {
    partNumber: number;
    put: { url: string; method: string; headers: Record<string, string> };
  }[],
  partFiles: string[],
): string[] {
  const config = parts.flatMap(({ partNumber, put }) => [
    `url = "${put.url}"`,
    `upload-file = "${partFiles[partNumber - 1]}"`,
    `request = "${put.method}"`,
    'header = "Expect:"',
    ...Object.entries(put.headers).map(([name, value]) => `header = "${name}: ${value}"`),
    "output = /dev/null",
    "next",
  ]);
  config.pop(); // `next` separates transfers; a trailing one would start an empty transfer
  return config;
}
