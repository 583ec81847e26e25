import type { Measured, Meter } from "./measure";
import {
  complete,
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
export async function curlPut(
  meter: Meter,
  session: Session,
  path: string,
  contentType: string,
  warn: (message: string) => void,
): Promise<Measured & { bytesSent: number }> {
  const file = await describe(path, contentType);
  const { uploadId, put } = await declareUpload(session, file);
  const run = await curlTo(meter, put, path);
  await complete(session, uploadId, (message) => warn(`untimed complete after curl: ${message}`));
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
