import { env } from "cloudflare:test";
import { expect } from "vitest";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";
import type { FileRecord } from "../../src/wire-types";
import type { Backend } from "../support/backends";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { ADMIN_TOKEN, RelayClient } from "../support/relay-client";

/**
 * A hostile review of sandbox-to-sandbox isolation: an attacker holds one session token and
 * names another session's ids (files, inbox items, uploads, upload-link requests and their
 * uploads, delivery Idempotency-Keys). A session of the same owner shares dedup and nothing
 * else; a session of another owner shares nothing; a revoked or expired token acts on
 * nothing. Every refusal must read exactly as the one for an id that never existed, so no
 * answer tells the attacker what another session holds.
 */

export const fakes = new PlatformFakes();

/** Ids of the right shape that no row has. */
export const UNKNOWN = {
  file: "fil_AAAAAAAAAAAAAAAAAAAAAA",
  upload: "upl_AAAAAAAAAAAAAAAAAAAAAA",
  item: "inb_AAAAAAAAAAAAAAAAAAAAAA",
  request: "req_AAAAAAAAAAAAAAAAAAAAAA",
};

export interface Session {
  sessionId: string;
  token: string;
  /** The chat the session may deliver to. */
  chat: string;
}

export interface InboxItem {
  itemId: string;
  name: string;
  sha256: string;
  file: FileRecord;
}

/** A response as a comparable value: status, and the JSON body unless it has none. */
export async function answerOf(response: Response): Promise<{ status: number; body: unknown }> {
  const text = await response.text();
  return { status: response.status, body: text === "" ? null : (JSON.parse(text) as unknown) };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What every isolation test file works with on one backend: a client, the cast, D1 and fake reads. */
export function isolationHarness(backend: Backend) {
  const client = new RelayClient(fakes.env(backend.env));

  async function mint(body: Record<string, unknown>): Promise<Session> {
    const chat = `telegram:${uniqueChatId()}`;
    const session = await client.mintSession({ destinations: [chat], ...body });
    return { ...session, chat };
  }

  const revoke = (session: Session) => client.revokeSession(session.sessionId);

  /**
   * The victim, a session of its owner (`sibling`), one of another owner (`stranger`), and
   * two tokens that no longer work: a revoked and an expired session of the victim's owner.
   */
  async function cast() {
    const owner = `victim-owner-${crypto.randomUUID()}`;
    const expired = await mint({ owner, ttlSeconds: 1 });
    const expiresAt = Date.now() + 1000;
    const victim = await mint({ owner });
    const sibling = await mint({ owner });
    const stranger = await mint({ owner: `stranger-${crypto.randomUUID()}` });
    const revoked = await mint({ owner });
    await revoke(revoked);
    return {
      victim,
      sibling,
      stranger,
      revoked,
      expired,
      /** Resolves once the expired session's token has stopped working. */
      expiry: async () => {
        await sleep(Math.max(0, expiresAt - Date.now()) + 1100);
        const refused = await client.call("GET", "/v1/files", { token: expired.token });
        expect(refused.status).toBe(401);
      },
    };
  }

  const fileRecord = async (token: string, fileId: string) =>
    answerOf(await client.call("GET", `/v1/files/${fileId}`, { token }));

  async function linksOf(fileId: string): Promise<number> {
    const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM links WHERE file_id = ?")
      .bind(fileId)
      .first<{ n: number }>();
    return row?.n ?? 0;
  }

  async function telegramPostsTo(chat: string): Promise<number> {
    const id = chat.split(":")[1];
    const posts = await fakes.requests("telegram");
    return posts.filter(
      (post) => post.fields.chat_id === id || (post.json as { chat_id?: unknown })?.chat_id === id,
    ).length;
  }

  async function inboxOf(token: string): Promise<InboxItem[]> {
    const response = await client.call("GET", "/v1/inbox", { token });
    expect(response.status).toBe(200);
    return ((await response.json()) as { items: InboxItem[] }).items;
  }

  async function seed(session: Session, name: string, bytes: Uint8Array): Promise<InboxItem> {
    const response = await client.call(
      "POST",
      `/v1/sessions/${session.sessionId}/inbox?name=${encodeURIComponent(name)}`,
      { token: ADMIN_TOKEN, body: bytes, headers: { "content-length": String(bytes.length) } },
    );
    expect(response.status).toBe(201);
    return response.json();
  }

  async function createRequest(token: string, body: object = {}): Promise<CreatedRequest> {
    const response = await client.call("POST", "/v1/requests", { token, json: body });
    expect(response.status).toBe(201);
    return response.json();
  }

  /** Every sandbox route that takes a file id, as the attacker would call it. */
  function fileRoutes(attacker: Session) {
    return [
      ["GET", (id: string) => `/v1/files/${id}`, {}],
      ["GET", (id: string) => `/v1/files/${id}/content`, {}],
      ["GET", (id: string) => `/v1/files/${id}/content`, { headers: { range: "bytes=10-19" } }],
      ["GET", (id: string) => `/v1/files/${id}/content`, { headers: { range: "bytes=-1" } }],
      ["HEAD", (id: string) => `/v1/files/${id}/content`, {}],
      ["GET", (id: string) => `/v1/files/${id}/deliveries`, {}],
      ["POST", (id: string) => `/v1/files/${id}/links`, { json: { maxDownloads: 5 } }],
      ["POST", (id: string) => `/v1/files/${id}/links`, { json: { bogus: true } }],
      [
        "POST",
        (id: string) => `/v1/files/${id}/deliveries`,
        { json: { to: attacker.chat }, headers: { "idempotency-key": "steal-1" } },
      ],
      ["DELETE", (id: string) => `/v1/files/${id}`, {}],
    ] as const;
  }

  return {
    client,
    mint,
    revoke,
    cast,
    fileRecord,
    linksOf,
    telegramPostsTo,
    inboxOf,
    seed,
    createRequest,
    fileRoutes,
  };
}
