import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { basename } from "node:path";
import { pipeline } from "node:stream/promises";

/** A sandbox session on the benchmark's relay. */
export interface Session {
  url: string;
  token: string;
}

/** The signed PUT the relay hands out for an upload (docs/api.md). */
export interface PutInstructions {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/** What `POST /v1/uploads` is told about a file's original bytes. */
export interface Original {
  name: string;
  size: number;
  sha256: string;
  contentType: string;
}

/** SHA-256 and size of a file, streamed (not part of any timed measurement). */
export async function describe(path: string, contentType: string): Promise<Original> {
  const hash = createHash("sha256");
  let size = 0;
  await pipeline(createReadStream(path), async (chunks: AsyncIterable<Buffer>) => {
    for await (const chunk of chunks) {
      hash.update(chunk);
      size += chunk.length;
    }
  });
  return { name: basename(path), size, sha256: hash.digest("hex"), contentType };
}

/** How the uploaded bytes relate to the original ones. */
export interface StoredForm {
  encoding: "identity" | "gzip";
  storedSize: number;
  storedSha256: string;
}

/** Declares an upload (identity unless `stored` says otherwise) and returns its signed PUT. */
export async function declareUpload(
  session: Session,
  file: Original,
  stored: StoredForm = { encoding: "identity", storedSize: file.size, storedSha256: file.sha256 },
): Promise<{ uploadId: string; put: PutInstructions }> {
  const answer = await call(session, "/v1/uploads", { ...file, ...stored });
  if (answer.status !== "upload")
    throw new Error(`expected an upload, got ${JSON.stringify(answer)}`);
  return answer as { uploadId: string; put: PutInstructions };
}

/** Declares an identity multipart upload with the given part digests; returns its part PUTs. */
export async function declareMultipart(
  session: Session,
  file: Original,
  partSha256: string[],
): Promise<{
  uploadId: string;
  partSize: number;
  parts: { partNumber: number; put: PutInstructions }[];
}> {
  const stored = { encoding: "identity", storedSize: file.size, storedSha256: file.sha256 };
  const answer = await call(session, "/v1/uploads", { ...file, ...stored, partSha256 });
  if (answer.status !== "multipart")
    throw new Error(`expected a multipart upload, got ${JSON.stringify(answer).slice(0, 200)}`);
  return answer as unknown as Awaited<ReturnType<typeof declareMultipart>>;
}

/**
 * Completes an upload so that the relay records its content. Given `onRetry`, a 503 is retried (up
 * to 5 times, 0.5 s apart) and reported through it: `wrangler dev`'s proxy answers the request
 * after a ~1 GiB PUT with `503 Your worker restarted mid-request` although nothing restarted.
 */
export async function complete(
  session: Session,
  uploadId: string,
  onRetry?: (message: string) => void,
): Promise<void> {
  const path = `/v1/uploads/${encodeURIComponent(uploadId)}/complete`;
  for (let attempt = 1; ; attempt++) {
    try {
      await call(session, path);
      return;
    } catch (error) {
      if (!onRetry || attempt >= 5 || !/: 503 /.test(String(error))) throw error;
      onRetry(`${String(error).slice(0, 160)}; retried`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/**
 * Waits until the relay has read back and verified a file it took in parts (it does so after
 * answering `complete`), so that its hashing does not slow the next measurement: polls the
 * dedup probe, which hits once the content is verified (each hit adds a file record).
 */
export async function waitUntilVerified(session: Session, file: Original, timeoutMs = 180_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const answer = await call(session, "/v1/uploads", file).catch((error: unknown) => {
      if (/: 503 /.test(String(error))) return { status: "retry" }; // wrangler dev's spurious 503: ask again
      throw error;
    });
    if (answer.status === "deduped") return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

/** The `POST /v1/uploads` probe the shim sends first, as curl arguments (for timing it). */
export function probeCurlArgs(session: Session, file: Original): string[] {
  return [
    ...["-sS", "-f", "-o", "/dev/null", "-X", "POST"],
    ...["-H", `authorization: Bearer ${session.token}`, "-H", "content-type: application/json"],
    ...["--data", JSON.stringify(file), `${session.url}/v1/uploads`],
  ];
}

async function call(session: Session, path: string, json?: object): Promise<{ status?: string }> {
  const response = await fetch(session.url + path, {
    method: "POST",
    headers: {
      authorization: `Bearer ${session.token}`,
      ...(json ? { "content-type": "application/json" } : {}),
    },
    body: json ? JSON.stringify(json) : null,
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as { status?: string };
}
