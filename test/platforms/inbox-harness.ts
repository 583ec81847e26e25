import { env } from "cloudflare:test";
import type { InboxRecord } from "../../src/services/inbox/inbox";
import { sha256Hex } from "../support/bytes";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { RelayClient } from "../support/relay-client";
import { discordKeys, nowSeconds, slackSignature } from "../support/webhook-signing";

/** The platform fakes, a relay client wired to them, and the webhook senders every inbox test file uses. */
export const fakes = new PlatformFakes();
export const SLACK_SECRET = "slack-secret-for-inbox-tests";
export const discord = await discordKeys();
export const client = new RelayClient(
  fakes.env(env, { DISCORD_PUBLIC_KEY: discord.publicKeyHex, SLACK_SIGNING_SECRET: SLACK_SECRET }),
);

export interface TelegramRef {
  file_id: string;
  file_unique_id: string;
  file_size: number;
  file_path: string;
}

export async function inboxOf(token: string): Promise<InboxRecord[]> {
  return (
    (await (await client.call("GET", "/v1/inbox", { token })).json()) as { items: InboxRecord[] }
  ).items;
}

export async function contentOf(token: string, item: InboxRecord): Promise<string> {
  const response = await client.call("GET", `/v1/files/${item.file.fileId}/content`, { token });
  return sha256Hex(await response.arrayBuffer());
}

let updateId = Math.floor(Math.random() * 1e9);
/** A Telegram update_id no other update of this run has used. */
export const nextUpdateId = () => ++updateId;
export function telegramWebhook(chatId: string, message: object, id = ++updateId) {
  return client.call("POST", "/webhooks/telegram", {
    json: {
      update_id: id,
      message: {
        message_id: 1,
        date: 0,
        chat: { id: Number(chatId), type: "private" },
        ...message,
      },
    },
    headers: { "x-telegram-bot-api-secret-token": "telegram-webhook-secret" },
  });
}

export async function sessionFor(destination: string) {
  return client.mintSession({ destinations: [destination] });
}

export async function discordInteraction(body: object) {
  const raw = JSON.stringify(body);
  const timestamp = nowSeconds();
  return client.call("POST", "/webhooks/discord", {
    body: raw,
    headers: {
      "content-type": "application/json",
      "x-signature-ed25519": await discord.sign(timestamp, raw),
      "x-signature-timestamp": timestamp,
    },
  });
}

export function discordCommand(
  channel: string,
  attachment: { id: string; filename: string; size: number; url: string },
) {
  return {
    id: uniqueChatId(),
    type: 2,
    application_id: "1",
    token: "t",
    version: 1,
    channel: { id: channel, type: 0 },
    channel_id: channel,
    data: {
      id: "9",
      name: "send",
      type: 1,
      options: [{ name: "file", type: 11, value: attachment.id }],
      resolved: {
        attachments: { [attachment.id]: { ...attachment, proxy_url: attachment.url } },
      },
    },
  };
}

export async function slackEvent(body: object) {
  const raw = JSON.stringify(body);
  const timestamp = nowSeconds();
  return client.call("POST", "/webhooks/slack", {
    body: raw,
    headers: {
      "content-type": "application/json",
      "x-slack-request-timestamp": timestamp,
      "x-slack-signature": await slackSignature(SLACK_SECRET, timestamp, raw),
    },
  });
}
