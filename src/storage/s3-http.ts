import { S3RequestPresigner } from "@aws-sdk/s3-request-presigner";
import { Sha256 } from "@smithy/core/checksum";
import { SignatureV4 } from "@smithy/signature-v4";
import type { HttpRequest } from "@smithy/types";
import type { S3Config } from "../config";
import { logEvent } from "../log";
import { type RetryPolicy, withRetry } from "../retry";

/**
 * SigV4-signed S3 requests over `fetch`, path-style. The relay needs only status codes
 * and headers from S3 (HEAD, ranged GET, PUT, DELETE), so it signs plain requests
 * rather than carrying a full SDK client and its XML parsing into the Worker.
 */
export class S3Http {
  private readonly signer: SignatureV4;
  private readonly presigner: S3RequestPresigner;
  private readonly endpoint: URL;

  constructor(private readonly config: S3Config) {
    const credentials = {
      accessKeyId: config.accessKeyId,
      secretAccessKey: config.secretAccessKey,
    };
    const options = {
      credentials,
      region: config.region,
      sha256: Sha256,
      service: "s3",
      uriEscapePath: false,
    };
    this.signer = new SignatureV4(options);
    this.presigner = new S3RequestPresigner(options);
    this.endpoint = new URL(config.endpoint);
  }

  /** A presigned URL whose signature also covers the given headers. */
  async presign(
    method: string,
    key: string,
    headers: Record<string, string>,
    expiresIn: number,
    query: Record<string, string> = {},
  ): Promise<string> {
    const signed = await this.presigner.presign(this.request(method, key, headers, query), {
      expiresIn,
      signableHeaders: new Set(Object.keys(headers)),
      unhoistableHeaders: new Set(Object.keys(headers).filter((name) => name.startsWith("x-amz-"))),
    });
    return this.urlOf(signed);
  }

  /** Sends a header-signed request; the body is not hashed (UNSIGNED-PAYLOAD). */
  async send(
    method: string,
    key: string,
    headers: Record<string, string> = {},
    body?: BodyInit | null,
    query: Record<string, string> = {},
  ): Promise<Response> {
    const request = this.request(
      method,
      key,
      { ...headers, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
      query,
    );
    const signed = await this.signer.sign(request);
    const outgoing = new Headers();
    for (const [name, value] of Object.entries(signed.headers)) {
      if (name !== "host") outgoing.set(name, value);
    }
    const url = this.urlOf(signed);
    const init = { method, headers: outgoing, body: body ?? null };
    // A streamed body is read once: only a request whose body is in hand can be sent again.
    if (body instanceof ReadableStream) return fetch(url, init);
    const sendOnce = async () => {
      const response = await fetch(url, init);
      if (RETRIED_STATUSES.has(response.status)) throw new RetriedAnswer(response);
      return response;
    };
    const onRetry = (error: unknown, attempt: number) => {
      const answer = error instanceof RetriedAnswer ? error.response : undefined;
      void answer?.body?.cancel().catch(() => undefined);
      const why = answer ? { status: answer.status } : { error: String(error) };
      logEvent("store_request_retried", { method, ...why, attempt: attempt - 1 }, "warn");
    };
    try {
      return await withRetry(sendOnce, S3_RETRY, () => true, { onRetry });
    } catch (error) {
      if (error instanceof RetriedAnswer) return error.response; // the last answer, as S3 gave it
      throw error;
    }
  }

  /** The object's path in the bucket, `/<bucket>/<key>` (also an `x-amz-copy-source`). */
  copySource(key: string): string {
    return `/${encodeURIComponent(this.config.bucket)}/${key.split("/").map(encodeURIComponent).join("/")}`;
  }

  private request(
    method: string,
    key: string,
    headers: Record<string, string>,
    query: Record<string, string> = {},
  ): HttpRequest {
    const path = `${this.endpoint.pathname.replace(/\/$/, "")}${this.copySource(key)}`;
    return {
      method,
      protocol: this.endpoint.protocol,
      hostname: this.endpoint.hostname,
      port: this.endpoint.port ? Number(this.endpoint.port) : undefined,
      path,
      query,
      headers: { ...headers, host: this.endpoint.host },
    };
  }

  private urlOf(request: HttpRequest): string {
    const url = new URL(
      `${request.protocol}//${request.hostname}${request.port ? `:${request.port}` : ""}${request.path}`,
    );
    const query = Object.entries(request.query ?? {}).flatMap(([name, value]) =>
      (Array.isArray(value) ? value : [value]).map(
        (v) => `${encodeRfc3986(name)}=${encodeRfc3986(String(v ?? ""))}`,
      ),
    );
    return query.length > 0 ? `${url.href}?${query.join("&")}` : url.href;
  }
}

/**
 * S3 answers 500 InternalError and 503 SlowDown when a request should be sent again, and a
 * pooled connection can fail as a request goes out on it: both are retried twice, as the AWS
 * SDKs do. Every request the relay sends S3 is idempotent or, for CreateMultipartUpload, at
 * worst leaves an upload the bucket's abort rule removes.
 */
const RETRIED_STATUSES = new Set([500, 503]);
/** Three attempts, 100 ms and then 400 ms apart. */
const S3_RETRY: RetryPolicy = {
  attempts: 3,
  baseDelayMs: 100,
  growth: 4,
  maxDelayMs: 400,
  jitter: false,
};

/** An answer of S3's that asks for the request again. */
class RetriedAnswer extends Error {
  constructor(readonly response: Response) {
    super(`S3 answered ${response.status}`);
  }
}

/** Query encoding as SigV4 canonicalises it, so the URL matches what was signed. */
function encodeRfc3986(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** The `<Code>` of an S3 XML error body, without an XML parser. */
export async function s3ErrorCode(response: Response): Promise<string> {
  return s3ErrorCodeIn(await response.text(), response.status);
}

/** The `<Code>` of an S3 error body already read, else the HTTP status. */
export function s3ErrorCodeIn(body: string, status: number): string {
  return /<Code>([^<]*)<\/Code>/.exec(body)?.[1] ?? `HTTP ${status}`;
}
