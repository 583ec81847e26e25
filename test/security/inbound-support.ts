import { createHash } from "node:crypto";
import http from "node:http";
import type { FakePlatforms } from "../fixtures/platforms/start-fake-platforms";
import type { discordKeys } from "../support/webhook-signing";

/** Shared helpers of test/security/inbound.test.ts. */

export const TELEGRAM_SECRET = "inbound-telegram-webhook-secret";
export const SLACK_SECRET = "inbound-slack-signing-secret";
export const MiB = 1024 * 1024;

export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

export interface InboxItem {
  itemId: string;
  name: string;
  size: number;
  source: string;
}

/** The relay's settings for all three chat platforms, pointed at the fakes. */
export function inboundRelayVars(
  fakes: FakePlatforms,
  discord: Awaited<ReturnType<typeof discordKeys>>,
): Record<string, string> {
  return {
    TELEGRAM_BOT_TOKEN: fakes.telegram.token,
    TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
    TELEGRAM_API_ROOT: fakes.telegram.url,
    DISCORD_BOT_TOKEN: fakes.discord.token,
    DISCORD_PUBLIC_KEY: discord.publicKeyHex,
    DISCORD_API_BASE: fakes.discord.url,
    DISCORD_ATTACHMENT_HOSTS: new URL(fakes.discord.url).host,
    SLACK_BOT_TOKEN: fakes.slack.token,
    SLACK_SIGNING_SECRET: SLACK_SECRET,
    SLACK_API_URL: fakes.slack.url,
    SLACK_FILE_HOSTS: new URL(fakes.slack.url).host,
  };
}

/** The inbox of the session with `token`, once it holds `expected` items (or after 20 s). */
export async function inboxAt(url: string, token: string, expected: number): Promise<InboxItem[]> {
  // The relay fetches attachments in the background after answering the webhook.
  for (let i = 0; ; i++) {
    const response = await fetch(`${url}/v1/inbox`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const { items } = (await response.json()) as { items: InboxItem[] };
    if (items.length >= expected || i >= 80) return items;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The files the session with `token` has sent. */
export async function filesAt(url: string, token: string): Promise<unknown[]> {
  const response = await fetch(`${url}/v1/files`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return ((await response.json()) as { files: unknown[] }).files;
}

/**
 * Posts `prefix` padded with spaces to `total` bytes (chunked when no `content-length` is
 * given) and resolves with the answer. `wrangler dev`'s proxy holds an
 * answer until the request body has arrived, so the body is sent whole (the Workers-runtime
 * tests show the relay answering while the body is still unsent); and after a body the Worker
 * left unread, the proxy may answer the next POST with its own 503 ("Your worker restarted
 * mid-request"), never the relay's: that one is sent again.
 */
export async function postBody(
  url: string,
  path: string,
  headers: Record<string, string>,
  total: number,
  prefix = "",
): Promise<{ status: number; body: string }> {
  for (let attempt = 1; ; attempt++) {
    // `wrangler dev`'s proxy may also reset the connection of a body the Worker refused
    // before reading it all (seen on a loaded machine): that is asked again too.
    const answer = await postOnce(url, path, headers, total, prefix).catch((error: unknown) => {
      if (attempt < 3 && (error as NodeJS.ErrnoException).code === "ECONNRESET") return null;
      throw error;
    });
    if (answer === null) continue;
    if (answer.status !== 503 || !answer.body.includes("restarted mid-request") || attempt === 3)
      return answer;
  }
}

function postOnce(
  url: string,
  path: string,
  headers: Record<string, string>,
  total: number,
  prefix: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${url}${path}`, { method: "POST", headers });
    request.on("response", (response) => {
      let body = "";
      response.on("data", (chunk: Buffer) => (body += chunk.toString()));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on("error", reject);
    const chunk = Buffer.alloc(MiB, 0x20);
    request.write(prefix);
    let sent = Buffer.byteLength(prefix);
    const write = () => {
      while (sent < total) {
        const piece = chunk.subarray(0, Math.min(MiB, total - sent));
        sent += piece.length;
        if (!request.write(piece)) return void request.once("drain", write);
      }
      request.end();
    };
    write();
  });
}
