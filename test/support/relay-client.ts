import {
  createExecutionContext,
  createMessageBatch,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { app } from "../../src/app";
import type { Bindings } from "../../src/env";
import worker from "../../src/index";
import type { VerifyJob } from "../../src/verify-job";

export const ORIGIN = "http://relay.test";
export const ADMIN_TOKEN = "test-admin-token";

interface CallOptions {
  token?: string;
  json?: unknown;
  body?: BodyInit | null;
  headers?: Record<string, string>;
}

/**
 * Talks to the relay in-process (the real app in the Workers runtime), and to the
 * store for URLs that point elsewhere (S3 presigned URLs).
 */
export class RelayClient {
  readonly env: Bindings;
  /** Verify jobs the relay queued and the consumer has not run yet. */
  readonly queued: VerifyJob[] = [];
  private holding = false;

  constructor(env: Bindings) {
    const queued = this.queued;
    const queue = {
      async send(job: VerifyJob) {
        queued.push(job);
      },
    };
    this.env = { ...env, VERIFY_QUEUE: queue as unknown as Bindings["VERIFY_QUEUE"] };
  }

  /**
   * Relay requests also wait for their background work (`waitUntil`) and, unless
   * `holdVerification()` was called, for the Worker's queue consumer to run what they queued,
   * so tests see its effects.
   */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    if (!url.startsWith(ORIGIN)) return fetch(url, init);
    const ctx = createExecutionContext();
    const response = await app.fetch(new Request(url, init), this.env, ctx);
    await waitOnExecutionContext(ctx);
    if (!this.holding) await this.runQueued();
    return followToStore(response, init);
  }

  /** Leaves queued verify jobs queued until `runQueued()`: to see a file while it is pending. */
  holdVerification(): void {
    this.holding = true;
  }

  /** Runs queued verify jobs after each request again (and the ones held so far). */
  resumeVerification(): void {
    this.holding = false;
  }

  /** Delivers the queued verify jobs to the Worker's `queue` handler, as the queue would. */
  async runQueued(): Promise<void> {
    while (this.queued.length > 0) {
      const jobs = this.queued.splice(0);
      const batch = createMessageBatch<VerifyJob>(
        "airlock-verify",
        jobs.map((body, index) => ({
          id: `msg-${Date.now()}-${index}`,
          timestamp: new Date(),
          attempts: 1,
          body,
        })),
      );
      const ctx = createExecutionContext();
      await worker.queue(batch, this.env, ctx);
      const result = await getQueueResult(batch, ctx);
      if (result.retryMessages.length > 0 || result.explicitAcks.length !== jobs.length)
        throw new Error(`verify jobs were not all acknowledged: ${JSON.stringify(result)}`);
    }
  }

  call(method: string, path: string, options: CallOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let body = options.body;
    if (options.json !== undefined) {
      headers["content-type"] ??= "application/json";
      body = JSON.stringify(options.json);
    }
    return this.fetch(`${ORIGIN}${path}`, { method, headers, body });
  }

  async mintSession(
    body: Record<string, unknown> = {},
  ): Promise<{ sessionId: string; token: string }> {
    const response = await this.call("POST", "/v1/sessions", { token: ADMIN_TOKEN, json: body });
    if (response.status !== 201)
      throw new Error(`mint failed: ${response.status} ${await response.text()}`);
    return response.json();
  }

  /** Revokes a session as the operator does. */
  async revokeSession(sessionId: string): Promise<void> {
    const response = await this.call("DELETE", `/v1/sessions/${sessionId}`, { token: ADMIN_TOKEN });
    if (response.status !== 200)
      throw new Error(`revoke failed: ${response.status} ${await response.text()}`);
  }
}

/** `{ error: { code, message } }` of a refused request, with its status. */
export async function errorOf(
  response: Response,
): Promise<{ status: number; code: string; message: string }> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, ...body.error };
}

/**
 * Follows a relay redirect to the store (a share-link download on S3) as curl -L or a browser
 * would, resending only the Range; `redirect: "manual"` returns the redirect itself.
 */
async function followToStore(response: Response, init: RequestInit): Promise<Response> {
  const location = response.headers.get("location");
  if (init.redirect === "manual" || response.status !== 307 || !location) return response;
  const range = new Headers(init.headers).get("range");
  return fetch(location, {
    method: init.method ?? "GET",
    headers: range ? { range } : {},
    signal: init.signal ?? null,
  });
}
