import { createHash, randomUUID } from "node:crypto";
import type { RelayConfig, RetryPolicy } from "../cli/config.js";
import type { Readable } from "node:stream";
import { CliError, RefusalError } from "../cli/errors.js";
import { MAX_JSON_BYTES, isRetryableStatus, readText, request, statusError } from "./http.js";
import { withRetry } from "./retry.js";
import type {
  DeliveryRecord,
  FileRecord,
  PartUpload,
  UploadAnswer,
  UploadState,
} from "../../../src/wire-types.js";
import type {
  CompletedGzip,
  ContentRequest,
  DeletedFile,
  HashAtCompleteDeclaration,
  InboxItem,
  LinkOptions,
  ShareLink,
  UploadDeclaration,
  UploadRequestBody,
  UploadRequestRecord,
} from "./relay-types.js";

export type {
  DeliveryRecord,
  FileRecord,
  MultipartAnswer,
  PartUpload,
  PutInstructions,
  UploadAnswer,
  UploadState,
} from "../../../src/wire-types.js";
export type * from "./relay-types.js";

/**
 * Relay error codes that override the status's usual verdict. The platform refused a delivery
 * (502), could not be reached through the relay's own retries (504) or is not set up (400): the
 * relay already retried what was worth retrying, so asking again at once would fail the same way
 * (a later `send` may try again under the same key). A delivery with the same key still being
 * sent (409) is worth asking again: a retry will find it finished.
 */
const FINAL_CODES = new Set(["delivery_failed", "platform_unreachable", "platform_not_configured"]);
const RETRYABLE_CODES = new Set(["delivery_in_progress"]);

function isRetryable(status: number, code: string | undefined): boolean {
  if (code !== undefined && FINAL_CODES.has(code)) return false;
  if (code !== undefined && RETRYABLE_CODES.has(code)) return true;
  return isRetryableStatus(status);
}

/** The relay's HTTP API as the shim uses it; every call is retried per the policy. */
export class RelayClient {
  constructor(
    private readonly config: RelayConfig,
    private readonly policy: RetryPolicy,
  ) {}

  /** Declares an upload (or probes for a dedup hit when the stored fields are left out). */
  async declareUpload(
    declaration: UploadDeclaration | HashAtCompleteDeclaration,
  ): Promise<UploadAnswer> {
    const action = `upload of ${declaration.name}`;
    const answer = await this.call<UploadAnswer>("POST", "/v1/uploads", action, declaration);
    const known = ["deduped", "missing", "upload", "multipart"];
    if (!known.includes(answer?.status)) {
      throw new CliError(`relay gave an unexpected answer to the ${action}`);
    }
    return answer;
  }

  /** Where an upload stands (`GET /v1/uploads/:id`), to resume it. */
  async uploadState(uploadId: string, name: string): Promise<UploadState> {
    const path = `/v1/uploads/${encodeURIComponent(uploadId)}`;
    const action = `lookup of the upload of ${name}`;
    const answer = await this.call<UploadState>("GET", path, action);
    if (!["upload", "multipart", "completed"].includes(answer?.status)) {
      throw new CliError(`relay gave an unexpected answer to the ${action}`);
    }
    return answer;
  }

  /**
   * Asks the relay to verify the stored bytes and register the file; `sha256` is the whole
   * file's, for an upload declared without it.
   */
  completeUpload(
    uploadId: string,
    name: string,
    sha256?: string | CompletedGzip,
  ): Promise<FileRecord> {
    const path = `/v1/uploads/${encodeURIComponent(uploadId)}/complete`;
    const body = typeof sha256 === "string" ? { sha256 } : sha256;
    return this.call("POST", path, `completing the upload of ${name}`, body);
  }

  /**
   * Signed PUTs for parts of an upload declared without its hashes, each bound to the
   * SHA-256 given for it (`POST /v1/uploads/:id/parts`).
   */
  async signParts(
    uploadId: string,
    name: string,
    parts: { partNumber: number; sha256: string; size?: number }[],
  ): Promise<PartUpload[]> {
    const path = `/v1/uploads/${encodeURIComponent(uploadId)}/parts`;
    const action = `upload of ${name}`;
    const answer = await this.call<{ parts?: PartUpload[] }>("POST", path, action, { parts });
    if (!Array.isArray(answer?.parts)) {
      throw new CliError(`relay gave an unexpected answer to the ${action}`);
    }
    return answer.parts;
  }

  /** This session's files, newest first. */
  async listFiles(): Promise<FileRecord[]> {
    const answer = await this.call<{ files?: FileRecord[] }>("GET", "/v1/files", "listing files");
    return answer.files ?? [];
  }

  /** One file's metadata. */
  getFile(fileId: string): Promise<FileRecord> {
    return this.call("GET", `/v1/files/${encodeURIComponent(fileId)}`, `lookup of file ${fileId}`);
  }

  /**
   * Delivers a file to a chat. The `Idempotency-Key` is derived from the file, destination and
   * caption, so a retried request (or the same delivery asked for again) never posts twice.
   */
  deliver(
    fileId: string,
    to: string,
    caption: string | undefined,
    name: string,
  ): Promise<DeliveryRecord> {
    const path = `/v1/files/${encodeURIComponent(fileId)}/deliveries`;
    const key = createHash("sha256")
      .update(JSON.stringify([fileId, to, caption ?? null]))
      .digest("hex");
    const action = `delivery of ${name} to ${to}`;
    return this.call<DeliveryRecord>("POST", path, action, { to, caption }, key);
  }

  /** Files waiting for this sandbox, oldest first. */
  async listInbox(): Promise<InboxItem[]> {
    const answer = await this.call<{ items?: InboxItem[] }>(
      "GET",
      "/v1/inbox",
      "listing the inbox",
    );
    return answer.items ?? [];
  }

  /** Takes an item out of the inbox, once its file is safely written. */
  async ack(itemId: string, name: string): Promise<void> {
    const path = `/v1/inbox/${encodeURIComponent(itemId)}/ack`;
    await this.call("POST", path, `acknowledging ${name}`);
  }

  /** Mints an upload link for a person to send this sandbox one file (`POST /v1/requests`). */
  async createUploadRequest(body: UploadRequestBody): Promise<UploadRequestRecord> {
    const action = "the upload link request";
    const answer = await this.call<UploadRequestRecord>("POST", "/v1/requests", action, body);
    if (typeof answer?.url !== "string" || typeof answer.requestId !== "string") {
      throw new CliError(`relay gave an unexpected answer to ${action}`);
    }
    return answer;
  }

  /**
   * Cancels an upload link (`DELETE /v1/requests/:id`): it stops working and the upload under
   * way through it is given up. Returns the request's state (`status: "cancelled"`).
   */
  cancelUploadRequest(requestId: string): Promise<{ requestId: string; status: string }> {
    const path = `/v1/requests/${encodeURIComponent(requestId)}`;
    return this.call("DELETE", path, `cancelling upload link ${requestId}`);
  }

  /** The authenticated request for a file's original bytes. */
  contentRequest(fileId: string): ContentRequest {
    return {
      url: `${this.config.url}/v1/files/${encodeURIComponent(fileId)}/content`,
      headers: { authorization: `Bearer ${this.config.token}` },
    };
  }

  /** Where the relay is, for messages. */
  get url(): string {
    return this.config.url;
  }

  /** Mints a share link of its own to a file (`POST /v1/files/:id/links`). */
  createLink(fileId: string, options: LinkOptions): Promise<ShareLink> {
    const path = `/v1/files/${encodeURIComponent(fileId)}/links`;
    return this.call("POST", path, `a new link to file ${fileId}`, options);
  }

  /** Deletes a file (`DELETE /v1/files/:id`): its share links stop working. */
  deleteFile(fileId: string): Promise<DeletedFile> {
    const path = `/v1/files/${encodeURIComponent(fileId)}`;
    return this.call("DELETE", path, `deleting file ${fileId}`);
  }

  /**
   * `POST /v1/single-uploads`: declares, stores, verifies and registers a small file in one
   * request (the declaration in the query, the stored bytes as the body; `body` makes a fresh
   * body for each attempt). Every attempt carries the same `Idempotency-Key`, so a retry after
   * a lost answer gets the file the first attempt made, not a second one. Undefined when the
   * relay has no such route (an older relay): the caller declares and PUTs instead.
   */
  async singleUpload(
    declaration: Required<Omit<UploadDeclaration, "partSha256" | "members">> &
      Pick<UploadDeclaration, "members">,
    body: () => Buffer | Readable,
  ): Promise<FileRecord | undefined> {
    const { name, size, sha256, contentType, encoding, storedSize, storedSha256 } = declaration;
    const query = new URLSearchParams({ name, size: String(size), sha256, contentType });
    query.set("encoding", encoding);
    query.set("storedSha256", storedSha256);
    if (declaration.members) {
      query.set("memberSpan", String(declaration.members.span));
      query.set("memberSizes", declaration.members.storedSizes.join(","));
    }
    const action = `upload of ${name}`;
    const headers = {
      authorization: `Bearer ${this.config.token}`,
      accept: "application/json",
      "content-type": "application/octet-stream",
      "content-length": String(storedSize),
      "idempotency-key": randomUUID(),
    };
    const url = `${this.config.url}/v1/single-uploads?${query}`;
    const target = { service: "relay" as const, url: this.config.url, action };
    try {
      return await withRetry(this.policy, target, async () => {
        const res = await request({ method: "POST", url, headers, body: body() });
        const text = await readText(res, MAX_JSON_BYTES);
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) return parseJson<FileRecord>(text, action);
        throw statusError(res, text, `relay refused ${action}`, isRetryable);
      });
    } catch (err) {
      if (err instanceof RefusalError && err.status === 404 && err.body.code === "not_found") {
        return undefined;
      }
      throw err;
    }
  }

  private call<T>(
    method: string,
    path: string,
    action: string,
    json?: unknown,
    idempotencyKey?: string,
  ): Promise<T> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.config.token}`,
      accept: "application/json",
    };
    if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
    let body: Buffer | undefined;
    if (method !== "GET") {
      body = Buffer.from(json === undefined ? "" : JSON.stringify(json));
      headers["content-length"] = String(body.length);
      if (json !== undefined) headers["content-type"] = "application/json";
    }
    const target = { service: "relay" as const, url: this.config.url, action };
    return withRetry(this.policy, target, async () => {
      const res = await request({ method, url: this.config.url + path, headers, body });
      const text = await readText(res, MAX_JSON_BYTES);
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) return parseJson<T>(text, action);
      throw statusError(res, text, `relay refused ${action}`, isRetryable);
    });
  }
}

function parseJson<T>(text: string, action: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new CliError(`relay answered the ${action} with something other than JSON`);
  }
}
