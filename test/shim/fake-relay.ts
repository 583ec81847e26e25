import { randomBytes } from "node:crypto";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import type { DeliveryRecord, FileRecord, InboxRecord as InboxItem } from "../../src/wire-types";
import { jsonAnswers, readCall } from "./fake-relay-http";
import { createPartStore, id, sha256 } from "./fake-relay-parts";
import type {
  Call,
  ContentOverride,
  DeliveryRule,
  FakeRelay,
  FakeRelayOptions,
} from "./fake-relay-types";

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

export type {
  Call,
  ContentOverride,
  DeliveryRule,
  FakeMultipartUpload,
  FakeRelay,
  FakeRelayOptions,
  PartPut,
  PartStats,
  Refusal,
} from "./fake-relay-types";
export type { DeliveryRecord, FileRecord } from "../../src/wire-types";
export type { InboxRecord as InboxItem } from "../../src/wire-types";

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
  const store = createPartStore(() => base);
  const { multipart, multipartAnswer, putPart } = store;

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
    const { call, raw, path } = await readCall(req);
    calls.push(call);
    hook?.(call);

    const { json, refuse } = jsonAnswers(res);

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
        const upload = store.openUpload({ ...body, storedSize: body.storedSize });
        if ("status" in upload) return refuse(upload);
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
      const original = store.assemble(upload);
      if (!Buffer.isBuffer(original)) return refuse(original);
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
    parts: store.parts,
    failPart: store.failPart,
    stallPart: store.stallPart,
    onPartBytes: store.onPartBytes,
    forgetUpload: store.forgetUpload,
    dropPart: store.dropPart,
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
