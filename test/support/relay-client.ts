import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { app } from "../../src/app";
import type { Bindings } from "../../src/env";

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
  constructor(readonly env: Bindings) {}

  /** Relay requests also wait for their background work (`waitUntil`), so tests see its effects. */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    if (!url.startsWith(ORIGIN)) return fetch(url, init);
    const ctx = createExecutionContext();
    const response = await app.fetch(new Request(url, init), this.env, ctx);
    await waitOnExecutionContext(ctx);
    return response;
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
}

/** `{ error: { code, message } }` of a refused request, with its status. */
export async function errorOf(
  response: Response,
): Promise<{ status: number; code: string; message: string }> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, ...body.error };
}
