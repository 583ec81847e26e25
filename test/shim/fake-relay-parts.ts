import { createHash, randomBytes } from "node:crypto";
import type http from "node:http";
import { gunzipSync } from "node:zlib";
import { partCount, partLength, partSizeFor } from "../../src/part-plan";
import type { MultipartAnswer } from "../../src/wire-types";
import type { FakeMultipartUpload, PartPut, PartStats, Refusal } from "./fake-relay-types";

export const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
export const id = (prefix: string) => `${prefix}_${randomBytes(6).toString("hex")}`;

/** A `POST /v1/uploads` body that asks for a multipart upload. */
export interface MultipartRequest {
  name: string;
  size: number;
  sha256: string;
  contentType?: string;
  encoding?: string;
  storedSize: number;
  storedSha256?: string;
  partSha256?: unknown;
}

/**
 * The fake relay's multipart part store (fake-relay.ts): the uploads it holds, the part PUTs it
 * takes as a strict store would, and the faults a test sets on them.
 */
export function createPartStore(baseUrl: () => string) {
  const multipart = new Map<string, FakeMultipartUpload>();
  const parts: PartStats = { bytesReceived: 0, puts: [], inFlight: 0, maxInFlight: 0 };
  const failures = new Map<number, { times: number; status: number }>();
  const stalled = new Set<number>();
  let partHook: ((total: number) => void) | undefined;

  const b64 = (hex: string) => Buffer.from(hex, "hex").toString("base64");
  const s3Error = (res: http.ServerResponse, status: number, code: string) => {
    const text = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`;
    res.writeHead(status, { "content-type": "application/xml" }).end(text);
  };

  /** The missing parts of an upload, each with a fresh signed PUT on this fake relay. */
  function multipartAnswer(upload: FakeMultipartUpload): MultipartAnswer {
    const count = upload.partSha256.length;
    const missing = [];
    for (let n = 1; n <= count; n++) {
      if (upload.held.has(n)) continue;
      missing.push({
        partNumber: n,
        put: {
          method: "PUT" as const,
          url: `${baseUrl()}/part/${upload.uploadId}/${n}?X-Amz-Signature=${randomBytes(8).toString("hex")}`,
          headers: {
            "content-length": String(partLength(upload.storedSize, upload.partSize, n)),
            "x-amz-checksum-sha256": b64(upload.partSha256[n - 1]!),
          },
        },
      });
    }
    return {
      status: "multipart",
      uploadId: upload.uploadId,
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      partSize: upload.partSize,
      partCount: count,
      parts: missing,
    };
  }

  /**
   * A part PUT, as a strict store takes it: streamed, checked against the signed length and
   * checksum, held only when whole and matching (400 BadDigest otherwise, nothing kept).
   */
  function putPart(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    uploadId: string,
    n: number,
  ) {
    parts.inFlight++;
    parts.maxInFlight = Math.max(parts.maxInFlight, parts.inFlight);
    const put: PartPut = { uploadId, partNumber: n, bytes: 0, status: 0 };
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      parts.inFlight--;
      put.status = res.headersSent ? res.statusCode : 0;
      parts.puts.push(put);
    };
    res.once("close", end);
    const hash = createHash("sha256");
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => {
      put.bytes += chunk.length;
      parts.bytesReceived += chunk.length;
      hash.update(chunk);
      chunks.push(chunk);
      partHook?.(parts.bytesReceived);
    });
    req.once("end", () => {
      const upload = multipart.get(uploadId);
      if (!upload || upload.file) return s3Error(res, 404, "NoSuchUpload");
      if (n < 1 || n > upload.partSha256.length) return s3Error(res, 400, "InvalidArgument");
      const length = partLength(upload.storedSize, upload.partSize, n);
      const signed =
        req.headers["content-length"] === String(length) &&
        req.headers["x-amz-checksum-sha256"] === b64(upload.partSha256[n - 1]!);
      if (!signed) return s3Error(res, 403, "SignatureDoesNotMatch");
      if (stalled.has(n)) return; // Never answered.
      const failure = failures.get(n);
      if (failure && failure.times > 0) {
        failure.times--;
        return s3Error(res, failure.status, "ServiceUnavailable");
      }
      if (put.bytes !== length || hash.digest("hex") !== upload.partSha256[n - 1]) {
        return s3Error(res, 400, "BadDigest");
      }
      upload.held.set(n, Buffer.concat(chunks));
      res.writeHead(200, { etag: `"${randomBytes(8).toString("hex")}"` }).end();
    });
  }

  /** A new multipart upload for `body`, or the refusal of its part digests. */
  function openUpload(body: MultipartRequest): FakeMultipartUpload | Refusal {
    const partSize = partSizeFor(body.size);
    const digests = body.partSha256;
    const valid =
      Array.isArray(digests) &&
      digests.length === partCount(body.storedSize, partSize) &&
      digests.every((d) => typeof d === "string" && /^[0-9a-f]{64}$/.test(d));
    if (!valid) {
      return { status: 400, code: "invalid_request", message: "bad partSha256" };
    }
    const upload: FakeMultipartUpload = {
      uploadId: id("u"),
      name: body.name,
      size: body.size,
      sha256: body.sha256,
      contentType: body.contentType ?? "application/octet-stream",
      encoding: body.encoding ?? "identity",
      storedSize: body.storedSize,
      storedSha256: body.storedSha256 ?? "",
      partSize,
      partSha256: digests as string[],
      held: new Map(),
    };
    return upload;
  }

  /** The original bytes of an upload whose parts are all held and match, or the refusal. */
  function assemble(upload: FakeMultipartUpload): Buffer | Refusal {
    if (upload.held.size < upload.partSha256.length) {
      return { status: 409, code: "upload_incomplete", message: "parts are missing" };
    }
    const stored = Buffer.concat(upload.partSha256.map((_, i) => upload.held.get(i + 1)!));
    if (stored.length !== upload.storedSize || sha256(stored) !== upload.storedSha256) {
      return { status: 409, code: "upload_rejected", message: "stored bytes differ" };
    }
    const original = upload.encoding === "gzip" ? gunzipSync(stored) : stored;
    if (original.length !== upload.size || sha256(original) !== upload.sha256) {
      return { status: 409, code: "upload_rejected", message: "original bytes differ" };
    }
    return original;
  }

  return {
    multipart,
    parts,
    multipartAnswer,
    putPart,
    openUpload,
    assemble,
    failPart(partNumber: number, times: number, status = 503) {
      failures.set(partNumber, { times, status });
    },
    stallPart(partNumber: number, stall = true) {
      if (stall) stalled.add(partNumber);
      else stalled.delete(partNumber);
    },
    onPartBytes(next: ((total: number) => void) | undefined) {
      partHook = next;
    },
    forgetUpload(uploadId: string) {
      multipart.delete(uploadId);
    },
    dropPart(uploadId: string, partNumber: number) {
      multipart.get(uploadId)?.held.delete(partNumber);
    },
  };
}
