import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { errorOf, RelayClient } from "../support/relay-client";
import { discordKeys, nowSeconds, slackSignature } from "../support/webhook-signing";
import { inboxCount, SLACK_SECRET, WHATSAPP_SECRET, webhookClient } from "./webhooks-harness";

let discord: Awaited<ReturnType<typeof discordKeys>>;
let client: RelayClient;

beforeAll(async () => {
  ({ client, discord } = await webhookClient());
});

const telegramUpdate = JSON.stringify({
  update_id: 1,
  message: {
    message_id: 1,
    date: 0,
    chat: { id: 42, type: "private" },
    document: { file_id: "f", file_unique_id: "u", file_name: "x.txt", file_size: 3 },
  },
});

// A wrong or missing proof on each platform: the chat-platform contract (test/platforms/chat-platforms.test.ts).
describe("POST /webhooks/telegram", () => {
  it("refuses a request with the secret's prefix with 401 and stores nothing", async () => {
    const before = await inboxCount();
    const response = await client.call("POST", "/webhooks/telegram", {
      body: telegramUpdate,
      headers: {
        "content-type": "application/json",
        "x-telegram-bot-api-secret-token": "telegram-webhook",
      },
    });
    expect(await errorOf(response)).toMatchObject({ status: 401, code: "webhook_unauthorized" });
    expect(await inboxCount()).toBe(before);
  });
});

describe("POST /webhooks/discord", () => {
  async function signed(body: string, timestamp = nowSeconds()) {
    return {
      "x-signature-ed25519": await discord.sign(timestamp, body),
      "x-signature-timestamp": timestamp,
      "content-type": "application/json",
    };
  }

  it("answers a signed PING with PONG", async () => {
    const body = JSON.stringify({ id: "1", type: 1, application_id: "2", token: "t", version: 1 });
    const response = await client.call("POST", "/webhooks/discord", {
      body,
      headers: await signed(body),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ type: 1 });
  });

  it("refuses a stale timestamp, however well signed", async () => {
    const body = JSON.stringify({ id: "1", type: 1, application_id: "2", token: "t", version: 1 });
    const before = await inboxCount();
    const response = await client.call("POST", "/webhooks/discord", {
      body,
      headers: await signed(body, nowSeconds(-600)),
    });
    expect(await errorOf(response)).toMatchObject({ status: 401, code: "webhook_unauthorized" });
    expect(await inboxCount()).toBe(before);
  });
});

describe("POST /webhooks/slack", () => {
  async function signed(body: string, timestamp = nowSeconds()) {
    return {
      "x-slack-request-timestamp": timestamp,
      "x-slack-signature": await slackSignature(SLACK_SECRET, timestamp, body),
      "content-type": "application/json",
    };
  }

  it("answers url_verification with the challenge", async () => {
    const body = JSON.stringify({ type: "url_verification", challenge: "abc123" });
    const response = await client.call("POST", "/webhooks/slack", {
      body,
      headers: await signed(body),
    });
    expect(await response.json()).toEqual({ challenge: "abc123" });
  });

  it("refuses a replay older than five minutes", async () => {
    const body = JSON.stringify({
      type: "event_callback",
      event_id: "Ev1",
      event: { type: "message", channel: "C1" },
    });
    const before = await inboxCount();
    const response = await client.call("POST", "/webhooks/slack", {
      body,
      headers: await signed(body, nowSeconds(-301)),
    });
    expect(await errorOf(response)).toMatchObject({ status: 401, code: "webhook_unauthorized" });
    expect(await inboxCount()).toBe(before);
  });
});

describe("webhooks of unconfigured platforms", () => {
  it("answer 404", async () => {
    const bare = new RelayClient(env);
    expect((await bare.call("POST", "/webhooks/telegram", { body: "{}" })).status).toBe(404);
    expect((await bare.call("POST", "/webhooks/other", { body: "{}" })).status).toBe(404);
  });
});

describe("GET /webhooks/whatsapp (subscription handshake)", () => {
  it("echoes hub.challenge for the right verify token", async () => {
    const response = await client.call(
      "GET",
      "/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=whatsapp-verify-token&hub.challenge=1158201444",
    );
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("1158201444");
  });

  it.each([
    ["a wrong verify token", "hub.mode=subscribe&hub.verify_token=guess&hub.challenge=1"],
    ["no verify token", "hub.mode=subscribe&hub.challenge=1"],
    ["another mode", "hub.mode=unsubscribe&hub.verify_token=whatsapp-verify-token&hub.challenge=1"],
    ["no challenge", "hub.mode=subscribe&hub.verify_token=whatsapp-verify-token"],
  ])("answers 403 for %s", async (_, query) => {
    const response = await client.call("GET", `/webhooks/whatsapp?${query}`);
    expect(await errorOf(response)).toMatchObject({ status: 403, code: "forbidden" });
  });

  it("has no handshake for the other platforms", async () => {
    const response = await client.call("GET", "/webhooks/telegram?hub.mode=subscribe");
    expect(response.status).toBe(404);
  });
});

describe("POST /webhooks/whatsapp", () => {
  const body = JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      {
        id: "1",
        changes: [
          {
            field: "messages",
            value: {
              metadata: { phone_number_id: "106540352242922" },
              messages: [
                {
                  from: "15551234567",
                  id: "wamid.forged",
                  type: "document",
                  document: { id: "123", filename: "x.txt" },
                },
              ],
            },
          },
        ],
      },
    ],
  });
  const sign = async (secret: string, text: string) => `sha256=${await hmacHex(secret, text)}`;

  it.each([
    [
      "a bare hex signature",
      async () => ({ "x-hub-signature-256": (await sign(WHATSAPP_SECRET, body)).slice(7) }),
    ],
  ])("refuses %s with 401 and stores nothing", async (_, headers) => {
    const before = await inboxCount();
    const response = await client.call("POST", "/webhooks/whatsapp", {
      body,
      headers: { "content-type": "application/json", ...(await headers()) },
    });
    expect(await errorOf(response)).toMatchObject({ status: 401, code: "webhook_unauthorized" });
    expect(await inboxCount()).toBe(before);
  });
});

async function hmacHex(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text));
  return [...new Uint8Array(mac)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
