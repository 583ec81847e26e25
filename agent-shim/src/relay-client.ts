import type { RelayConfig, RetryPolicy } from "./config.js";
import { CliError, RetryableStatusError } from "./errors.js";
import { describeErrorBody, isRetryableStatus, readText, request, retryAfterMs } from "./http.js";
import { withRetry } from "./retry.js";

/** A stored file as the relay describes it (docs/api.md, "Files"). */
export interface FileRecord {
  fileId: string;
  name: string;
  size: number;
  sha256: string;
  contentType: string;
  createdAt: string;
  expiresAt: string;
  url: string;
  sessionId: string;
  deduped: boolean;
}

/** `POST /v1/uploads`: the original fields alone probe for a dedup hit; all of them ask to upload. */
export interface UploadDeclaration {
  name: string;
  size: number;
  sha256: string;
  contentType: string;
  encoding?: "identity" | "gzip";
  storedSize?: number;
  storedSha256?: string;
}

/** The signed request that stores the bytes: send it exactly as given. */
export interface PutInstructions {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/** The relay's answer to an upload declaration. */
export type UploadAnswer =
  | { status: "deduped"; file: FileRecord }
  | { status: "missing" }
  | { status: "upload"; uploadId: string; expiresAt: string; put: PutInstructions };

/** A request for a file's bytes, ready for `download`. */
export interface ContentRequest {
  url: string;
  headers: Record<string, string>;
}

/** The relay's HTTP API as the shim uses it; every call is retried per the policy. */
export class RelayClient {
  constructor(
    private readonly config: RelayConfig,
    private readonly policy: RetryPolicy,
  ) {}

  /** Declares an upload (or probes for a dedup hit when the stored fields are left out). */
  async declareUpload(declaration: UploadDeclaration): Promise<UploadAnswer> {
    const action = `upload of ${declaration.name}`;
    const answer = await this.call<UploadAnswer>("POST", "/v1/uploads", action, declaration);
    const known = ["deduped", "missing", "upload"];
    if (!known.includes(answer?.status)) {
      throw new CliError(`relay gave an unexpected answer to the ${action}`);
    }
    return answer;
  }

  /** Asks the relay to verify the stored bytes and register the file. */
  completeUpload(uploadId: string, name: string): Promise<FileRecord> {
    const path = `/v1/uploads/${encodeURIComponent(uploadId)}/complete`;
    return this.call("POST", path, `completing the upload of ${name}`);
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

  private call<T>(method: string, path: string, action: string, json?: unknown): Promise<T> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.config.token}`,
      accept: "application/json",
    };
    let body: Buffer | undefined;
    if (method !== "GET") {
      body = Buffer.from(json === undefined ? "" : JSON.stringify(json));
      headers["content-length"] = String(body.length);
      if (json !== undefined) headers["content-type"] = "application/json";
    }
    const target = { service: "relay" as const, url: this.config.url, action };
    return withRetry(this.policy, target, async () => {
      const res = await request({ method, url: this.config.url + path, headers, body });
      const text = await readText(res);
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) return parseJson<T>(text, action);
      const detail = describeErrorBody(status, text);
      if (isRetryableStatus(status)) {
        throw new RetryableStatusError(status, detail, retryAfterMs(res));
      }
      throw new CliError(`relay refused ${action}: ${detail}`);
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
