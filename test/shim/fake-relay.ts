import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { partCount, partLength, partSizeFor } from "../../src/part-plan";
import type {
  DeliveryRecord,
  FileRecord,
  InboxRecord as InboxItem,
  MultipartAnswer,
} from "../../src/wire-types";

/**
 * A stand-in for the relay on 127.0.0.1 that speaks the routes of docs/api.md the shim uses for
 * send, --to and pull, records every request, and can be told to misbehave per file or
 * destination. It can drift from the relay: a shim case that needs only what the relay does
 * runs against the real one (`sharedRelay()` / `relaySuite` in test/support; an inbox item is
 * the operator's seed, test/support/seed-inbox.ts). This fake is for what the real relay cannot
 * be made to do (docs/testing.md keeps the same list):
 * - serve a file's bytes wrong: other bytes, a missing or disagreeing ETag, a connection cut
 *   after n bytes, a refusal, a 40 KB Content-Disposition or oversized headers
 *   (`ContentOverride`);
 * - hand out names the relay would clean (hostile inbox names, as from an older relay);
 * - answer a delivery as chosen per destination and attempt, with no chat platform behind it
 *   (the shared relay has none configured): a mode and method, a refusal, a failure recorded
 *   under a repeated Idempotency-Key, an unreachable platform (`setDeliveryRule`);
 * - be a store that fails, stalls, loses or forgets multipart parts and uploads, and counts the
 *   part PUTs in flight and the bytes received (`failPart`, `stallPart`, `dropPart`,
 *   `forgetUpload`, `onPartBytes`, `parts`);
 * - show the requests a shim made, in order, and the disk at each one, or go away mid-run
 *   (`calls`, `onCall`, `stop`);
 * - listen on TLS with a certificate of the test's own (`tls`).
 */

export const TOKEN = "fake-session-token";

/** One request as the fake relay received it. */
export interface Call {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The body parsed as JSON, when it was JSON. */
  json?: unknown;
}

export type { DeliveryRecord, FileRecord } from "../../src/wire-types";
export type { InboxRecord as InboxItem } from "../../src/wire-types";

/** An answer the fake relay gives instead of the normal one. */
export interface Refusal {
  status: number;
  code?: string;
  message?: string;
  headers?: Record<string, string>;
}

/** How `GET /v1/files/:id/content` serves a file. */
export interface ContentOverride {
  /** Bytes to send instead of the file's own. */
  body?: Buffer;
  /** The ETag's SHA-256, or null for no ETag (default: the file's SHA-256). */
  etag?: string | null;
  /** Cut the connection after sending this many bytes. */
  cutAfter?: number;
  /** Answer with an error instead. */
  refuse?: Refusal;
  /** Extra (or replacing) response headers, e.g. a huge Content-Disposition. */
  headers?: Record<string, string>;
}

/**
 * Decides a delivery's answer: a refusal, or a record with the given mode and method (and an
 * error, for a failed attempt recorded under its key, as the relay returns it when asked again).
 * `attempt` counts the requests with this Idempotency-Key before this one.
 */
export type DeliveryRule = (
  to: string,
  attempt: number,
) => Refusal | { mode: "native" | "link"; method: string; error?: string } | undefined;

/** A multipart upload as the fake relay (and its store) holds it. */
export interface FakeMultipartUpload {
  uploadId: string;
  name: string;
  size: number;
  sha256: string;
  contentType: string;
  encoding: string;
  storedSize: number;
  storedSha256: string;
  partSize: number;
  partSha256: string[];
  /** Parts the store holds, by number. */
  held: Map<number, Buffer>;
  /** Set once completed. */
  file?: FileRecord;
}

/** One part PUT as it ended. */
export interface PartPut {
  uploadId: string;
  partNumber: number;
  /** Body bytes received. */
  bytes: number;
  /** The answer's status; 0 when the client went away first (or the part was stalled). */
  status: number;
}

/** What the fake store saw of multipart uploads. */
export interface PartStats {
  /** Body bytes of every part PUT received, whole or cut short, failed or not. */
  bytesReceived: number;
  /** Part PUTs, in the order they ended. */
  puts: PartPut[];
  /** Part PUTs in flight right now, and the most there ever were at once. */
  inFlight: number;
  maxInFlight: number;
}

export interface FakeRelay {
  url: string;
  calls: Call[];
  /** Files by id, with their bytes. */
  files: Map<string, FileRecord & { bytes: Buffer }>;
  /** Items still in the inbox, by id. */
  inbox: Map<string, InboxItem>;
  /** Item ids acknowledged, in order. */
  acked: string[];
  /** Deliveries made, one per Idempotency-Key (or per request without one). */
  deliveries: DeliveryRecord[];
  /** Puts a file in the inbox (served as `content` says, if given); returns the item. */
  addInboxItem(name: string, bytes: Buffer, options?: { content?: ContentOverride }): InboxItem;
  /** Replaces how deliveries are answered (default: native `sendDocument`). */
  setDeliveryRule(rule: DeliveryRule): void;
  /** Runs before each answer, with the request: a test can look at the disk at that moment. */
  onCall(hook: ((call: Call) => void) | undefined): void;
  /** Requests of `METHOD /path` form, in order. */
  routes(): string[];
  /** Multipart uploads by id. */
  multipart: Map<string, FakeMultipartUpload>;
  /** What the store saw of part PUTs. */
  parts: PartStats;
  /** The next `times` PUTs of part `partNumber` (of any upload) are answered `status` (503). */
  failPart(partNumber: number, times: number, status?: number): void;
  /** PUTs of part `partNumber` are read but never answered (until `stalled` is false). */
  stallPart(partNumber: number, stalled?: boolean): void;
  /** Runs after each chunk of a part PUT's body arrives, with `parts.bytesReceived`. */
  onPartBytes(hook: ((total: number) => void) | undefined): void;
  /** Forgets an upload: `GET /v1/uploads/:id` answers 404 upload_not_found. */
  forgetUpload(uploadId: string): void;
  /** Drops a part the store held, as if it had lost it (complete then finds it missing). */
  dropPart(uploadId: string, partNumber: number): void;
  stop(): Promise<void>;
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
const id = (prefix: string) => `${prefix}_${randomBytes(6).toString("hex")}`;

/** How the fake relay listens: plain http, or https with this key and certificate. */
export interface FakeRelayOptions {
  tls?: { key: string; cert: string };
}

export async function startFakeRelay(options: FakeRelayOptions = {}): Promise<FakeRelay> {
  const calls: Call[] = [];
  const files = new Map<string, FileRecord & { bytes: Buffer }>();
  const contentOverrides = new Map<string, ContentOverride>();
  const inbox = new Map<string, InboxItem>();
  const acked: string[] = [];
  const deliveries: DeliveryRecord[] = [];
  const deliveriesByKey = new Map<string, DeliveryRecord>();
  const attemptsByKey = new Map<string, number>();
  const uploads = new Map<
    string,
    { name: string; contentType: string; encoding: string; bytes?: Buffer }
  >();
  let rule: DeliveryRule = () => undefined;
  let hook: ((call: Call) => void) | undefined;
  let base = "";
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
          url: `${base}/part/${upload.uploadId}/${n}?X-Amz-Signature=${randomBytes(8).toString("hex")}`,
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

  function addFile(name: string, bytes: Buffer, contentType: string): FileRecord {
    const now = new Date();
    const record: FileRecord = {
      fileId: id("f"),
      name,
      size: bytes.length,
      status: "verified",
      sha256: sha256(bytes),
      contentType,
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + 86_400_000).toISOString(),
      url: `${base}/d/${randomBytes(12).toString("hex")}`,
      urlExpiresAt: new Date(now.getTime() + 86_400_000).toISOString(),
      sessionId: "s_fake",
      deduped: false,
      origin: "sandbox",
    };
    files.set(record.fileId, { ...record, bytes });
    return record;
  }

  const handle: http.RequestListener = async (req, res) => {
    const part = /^\/part\/([^/?]+)\/(\d+)(\?|$)/.exec(req.url ?? "");
    if (req.method === "PUT" && part) {
      calls.push({ method: "PUT", path: `/part/${part[1]}/${part[2]}`, headers: req.headers });
      return putPart(req, res, part[1]!, Number(part[2]));
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const path = (req.url ?? "/").split("?")[0]!;
    const call: Call = { method: req.method ?? "GET", path, headers: req.headers };
    if (req.headers["content-type"]?.startsWith("application/json")) {
      try {
        call.json = JSON.parse(raw.toString("utf8"));
      } catch {
        call.json = raw.toString("utf8");
      }
    }
    calls.push(call);
    hook?.(call);

    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(text)),
        ...headers,
      });
      res.end(text);
    };
    const refuse = (r: Refusal) =>
      json(
        r.status,
        { error: { code: r.code ?? "error", message: r.message ?? "refused" } },
        r.headers,
      );

    if (path.startsWith("/v1/") && req.headers.authorization !== `Bearer ${TOKEN}`) {
      return refuse({ status: 401, code: "unauthorized", message: "bad token" });
    }
    const route = `${call.method} ${path}`;
    let m: RegExpExecArray | null;

    if (route === "POST /v1/uploads") {
      const body = call.json as {
        name: string;
        size: number;
        sha256: string;
        contentType?: string;
        encoding?: string;
        storedSize?: number;
        storedSha256?: string;
        partSha256?: unknown;
      };
      if (body.storedSize === undefined) return json(200, { status: "missing" });
      if (body.partSha256 !== undefined) {
        const partSize = partSizeFor(body.size);
        const digests = body.partSha256;
        const valid =
          Array.isArray(digests) &&
          digests.length === partCount(body.storedSize, partSize) &&
          digests.every((d) => typeof d === "string" && /^[0-9a-f]{64}$/.test(d));
        if (!valid) {
          return refuse({ status: 400, code: "invalid_request", message: "bad partSha256" });
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
        multipart.set(upload.uploadId, upload);
        return json(201, multipartAnswer(upload));
      }
      const uploadId = id("u");
      uploads.set(uploadId, {
        name: body.name,
        contentType: body.contentType ?? "application/octet-stream",
        encoding: body.encoding ?? "identity",
      });
      return json(201, {
        status: "upload",
        uploadId,
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        put: {
          method: "PUT",
          url: `${base}/blob/${uploadId}`,
          headers: { "content-length": String(body.storedSize) },
        },
      });
    }
    if (call.method === "PUT" && (m = /^\/blob\/([^/]+)$/.exec(path))) {
      const upload = uploads.get(m[1]!);
      if (!upload) return refuse({ status: 404, code: "upload_not_found" });
      upload.bytes = raw;
      res.writeHead(200).end();
      return;
    }
    if (call.method === "GET" && (m = /^\/v1\/uploads\/([^/]+)$/.exec(path))) {
      const upload = multipart.get(decodeURIComponent(m[1]!));
      if (!upload) return refuse({ status: 404, code: "upload_not_found" });
      if (upload.file) {
        return json(200, { status: "completed", uploadId: upload.uploadId, file: upload.file });
      }
      return json(200, multipartAnswer(upload));
    }
    if (
      call.method === "POST" &&
      (m = /^\/v1\/uploads\/([^/]+)\/complete$/.exec(path)) &&
      multipart.has(decodeURIComponent(m[1]!))
    ) {
      const upload = multipart.get(decodeURIComponent(m[1]!))!;
      if (upload.file) return json(200, upload.file);
      if (upload.held.size < upload.partSha256.length) {
        return refuse({ status: 409, code: "upload_incomplete", message: "parts are missing" });
      }
      const stored = Buffer.concat(upload.partSha256.map((_, i) => upload.held.get(i + 1)!));
      if (stored.length !== upload.storedSize || sha256(stored) !== upload.storedSha256) {
        return refuse({ status: 409, code: "upload_rejected", message: "stored bytes differ" });
      }
      const original = upload.encoding === "gzip" ? gunzipSync(stored) : stored;
      if (original.length !== upload.size || sha256(original) !== upload.sha256) {
        return refuse({ status: 409, code: "upload_rejected", message: "original bytes differ" });
      }
      upload.file = addFile(upload.name, original, upload.contentType);
      upload.held.clear(); // The parts became the object.
      return json(201, upload.file);
    }
    if (call.method === "POST" && (m = /^\/v1\/uploads\/([^/]+)\/complete$/.exec(path))) {
      const upload = uploads.get(m[1]!);
      if (!upload?.bytes) return refuse({ status: 409, code: "upload_not_uploaded" });
      const original = upload.encoding === "gzip" ? gunzipSync(upload.bytes) : upload.bytes;
      return json(201, addFile(upload.name, original, upload.contentType));
    }
    if (call.method === "POST" && (m = /^\/v1\/files\/([^/]+)\/deliveries$/.exec(path))) {
      const file = files.get(decodeURIComponent(m[1]!));
      if (!file) return refuse({ status: 404, code: "file_not_found" });
      const { to } = call.json as { to: string; caption?: string };
      const key = req.headers["idempotency-key"] as string | undefined;
      const attempt = key === undefined ? 0 : (attemptsByKey.get(key) ?? 0);
      if (key !== undefined) attemptsByKey.set(key, attempt + 1);
      const earlier = key === undefined ? undefined : deliveriesByKey.get(key);
      if (earlier) return json(201, earlier);
      const answer = rule(to, attempt) ?? { mode: "native", method: "sendDocument" };
      if ("status" in answer) return refuse(answer);
      const record: DeliveryRecord = {
        deliveryId: id("d"),
        fileId: file.fileId,
        to,
        mode: answer.mode,
        method: answer.method,
        status: answer.error === undefined ? "delivered" : "failed",
        messageId: answer.error === undefined ? String(deliveries.length + 1) : null,
        error: answer.error ?? null,
        uploadedBytes: answer.mode === "native" && answer.error === undefined ? file.size : 0,
        createdAt: new Date().toISOString(),
      };
      deliveries.push(record);
      if (key !== undefined) deliveriesByKey.set(key, record);
      return json(201, record);
    }
    if (route === "GET /v1/inbox") {
      return json(200, { items: [...inbox.values()] });
    }
    if (call.method === "POST" && (m = /^\/v1\/inbox\/([^/]+)\/ack$/.exec(path))) {
      const itemId = decodeURIComponent(m[1]!);
      if (!inbox.delete(itemId) && !acked.includes(itemId)) {
        return refuse({ status: 404, code: "inbox_item_not_found" });
      }
      acked.push(itemId);
      return json(200, { itemId, ackedAt: new Date().toISOString() });
    }
    if (call.method === "GET" && (m = /^\/v1\/files\/([^/]+)\/content$/.exec(path))) {
      const fileId = decodeURIComponent(m[1]!);
      const file = files.get(fileId);
      if (!file) return refuse({ status: 404, code: "file_not_found" });
      const override = contentOverrides.get(fileId) ?? {};
      if (override.refuse) return refuse(override.refuse);
      const body = override.body ?? file.bytes;
      const etag = override.etag === undefined ? file.sha256 : override.etag;
      res.writeHead(200, {
        "content-type": file.contentType,
        "content-length": String(body.length),
        "content-disposition": `attachment; filename="download"; filename*=UTF-8''${encodeURIComponent(file.name)}`,
        ...(etag === null ? {} : { etag: `"${etag}"` }),
        ...override.headers,
      });
      if (override.cutAfter !== undefined) {
        res.write(body.subarray(0, override.cutAfter), () => res.socket?.destroy());
        return;
      }
      res.end(body);
      return;
    }
    refuse({ status: 404, code: "not_found", message: `no route ${route}` });
  };
  const server = options.tls ? https.createServer(options.tls, handle) : http.createServer(handle);

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const scheme = options.tls ? "https" : "http";
  base = `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: base,
    calls,
    files,
    inbox,
    acked,
    deliveries,
    addInboxItem(name, bytes, options = {}) {
      const file = addFile(name, bytes, "application/octet-stream");
      if (options.content) contentOverrides.set(file.fileId, options.content);
      const item: InboxItem = {
        itemId: id("i"),
        source: "telegram:42",
        name,
        size: bytes.length,
        sha256: file.sha256,
        contentType: file.contentType,
        createdAt: new Date().toISOString(),
        file,
      };
      inbox.set(item.itemId, item);
      return item;
    },
    setDeliveryRule(next) {
      rule = next;
    },
    onCall(next) {
      hook = next;
    },
    routes() {
      return calls.map((c) => `${c.method} ${c.path}`);
    },
    multipart,
    parts,
    failPart(partNumber, times, status = 503) {
      failures.set(partNumber, { times, status });
    },
    stallPart(partNumber, stall = true) {
      if (stall) stalled.add(partNumber);
      else stalled.delete(partNumber);
    },
    onPartBytes(next) {
      partHook = next;
    },
    forgetUpload(uploadId) {
      multipart.delete(uploadId);
    },
    dropPart(uploadId, partNumber) {
      multipart.get(uploadId)?.held.delete(partNumber);
    },
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
