import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { CHAT_ID_LIMIT, TOO_OFTEN, chatIdText } from "../../src/services/chat-id";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { errorOf, RelayClient } from "../support/relay-client";
import { discordKeys, hubSignature, nowSeconds, slackSignature } from "../support/webhook-signing";

const fakes = new PlatformFakes();
const urls = inject("platforms");
const SLACK_SECRET = "slack-secret-for-chat-id-tests";
const WHATSAPP_SECRET = "whatsapp-secret-for-chat-id-tests";
const discord = await discordKeys();
const client = new RelayClient(
  fakes.env(env, {
    DISCORD_PUBLIC_KEY: discord.publicKeyHex,
    SLACK_SIGNING_SECRET: SLACK_SECRET,
    WHATSAPP_ACCESS_TOKEN: urls.tokens.whatsapp,
    WHATSAPP_PHONE_NUMBER_ID: urls.whatsappPhoneNumberId,
    WHATSAPP_APP_SECRET: WHATSAPP_SECRET,
    WHATSAPP_API_BASE: urls.whatsapp,
  }),
);

let updateId = Math.floor(Math.random() * 1e9);
function telegram(chat: string, text: string, secret: string | null = "telegram-webhook-secret") {
  return client.call("POST", "/webhooks/telegram", {
    json: {
      update_id: ++updateId,
      message: { message_id: 1, date: 0, chat: { id: Number(chat), type: "group" }, text },
    },
    headers: secret ? { "x-telegram-bot-api-secret-token": secret } : {},
  });
}

/** The texts the fake Telegram was asked to post in `chat`. */
async function telegramTexts(chat: string): Promise<string[]> {
  const sent = await fakes.requests("telegram", "sendMessage");
  return sent.filter((r) => r.fields.chat_id === chat).map((r) => r.fields.text ?? "");
}

async function discordAsk(channel: string, signed = true) {
  const raw = JSON.stringify({
    id: uniqueChatId(),
    type: 2,
    token: "interaction-token",
    channel: { id: channel, type: 0 },
    data: { id: "1", name: "airlock", type: 1 },
  });
  const timestamp = nowSeconds();
  const signature = signed ? await discord.sign(timestamp, raw) : "00".repeat(64);
  return client.call("POST", "/webhooks/discord", {
    body: raw,
    headers: {
      "content-type": "application/json",
      "x-signature-ed25519": signature,
      "x-signature-timestamp": timestamp,
    },
  });
}

async function slackAsk(channel: string, secret = SLACK_SECRET) {
  const raw = new URLSearchParams({
    command: "/airlock",
    text: "",
    team_id: "T0FAKE0001",
    channel_id: channel,
    user_id: "U0PERSON1",
  }).toString();
  const timestamp = nowSeconds();
  return client.call("POST", "/webhooks/slack", {
    body: raw,
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-slack-request-timestamp": timestamp,
      "x-slack-signature": await slackSignature(secret, timestamp, raw),
    },
  });
}

async function whatsappAsk(from: string, text: string, secret = WHATSAPP_SECRET) {
  const raw = JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      {
        id: "102290129340398",
        changes: [
          {
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: { phone_number_id: urls.whatsappPhoneNumberId },
              messages: [
                { from, id: `wamid.${uniqueChatId()}`, type: "text", text: { body: text } },
              ],
            },
          },
        ],
      },
    ],
  });
  return client.call("POST", "/webhooks/whatsapp", {
    body: raw,
    headers: {
      "content-type": "application/json",
      "x-hub-signature-256": await hubSignature(secret, raw),
    },
  });
}

describe("/airlock answers with the chat's destination id", () => {
  it("the answer is the id and the line that binds it, nothing else", () => {
    expect(chatIdText("telegram:-1001234")).toBe(
      "This chat's Airlock destination id: telegram:-1001234\n" +
        'To bind a session to it: POST /v1/sessions {"destinations":["telegram:-1001234"]}',
    );
  });

  it("Telegram: posts the answer in a bound chat, stores nothing, and only on the verified path", async () => {
    const chat = `-100${uniqueChatId()}`;
    // Bound: the answer still says nothing of the session.
    await client.mintSession({ destinations: [`telegram:${chat}`] });
    expect((await telegram(chat, "/airlock@airlock_fake_bot")).status).toBe(200);
    expect(await telegramTexts(chat)).toEqual([chatIdText(`telegram:${chat}`)]);
    const stored = await env.DB.prepare("SELECT count(*) AS n FROM inbox WHERE source = ?")
      .bind(`telegram:${chat}`)
      .first<{ n: number }>();
    expect(stored?.n).toBe(0);

    const other = `-100${uniqueChatId()}`;
    for (const secret of [null, "not-the-secret"]) {
      expect(await errorOf(await telegram(other, "/airlock", secret))).toMatchObject({
        status: 401,
        code: "webhook_unauthorized",
      });
    }
    expect(await telegramTexts(other)).toEqual([]);
  });

  it(`Telegram: at most ${CHAT_ID_LIMIT.answers} answers per chat in ten minutes; other chats unaffected`, async () => {
    const chat = uniqueChatId();
    for (let i = 0; i < CHAT_ID_LIMIT.answers + 2; i++)
      expect((await telegram(chat, "/airlock")).status).toBe(200);
    expect(await telegramTexts(chat)).toHaveLength(CHAT_ID_LIMIT.answers);
    const other = uniqueChatId();
    await telegram(other, "/airlock");
    expect(await telegramTexts(other)).toEqual([chatIdText(`telegram:${other}`)]);
  });

  it("Discord: answers the slash command in its response, only to a signed request, and rate-limits", async () => {
    const channel = uniqueChatId();
    const answer = await discordAsk(channel);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({
      type: 4,
      data: {
        content: chatIdText(`discord:${channel}`),
        allowed_mentions: { parse: [] },
        flags: 64,
      },
    });
    expect(await errorOf(await discordAsk(uniqueChatId(), false))).toMatchObject({
      status: 401,
      code: "webhook_unauthorized",
    });
    for (let i = 1; i < CHAT_ID_LIMIT.answers; i++) await discordAsk(channel);
    const past = (await (await discordAsk(channel)).json()) as { data: { content: string } };
    expect(past.data.content).toBe(TOO_OFTEN);
  });

  it("Slack: answers the slash command (only the asker sees it), only when signed", async () => {
    const channel = `C${uniqueChatId()}`;
    const answer = await slackAsk(channel);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({
      response_type: "ephemeral",
      text: chatIdText(`slack:${channel}`),
    });
    expect(await errorOf(await slackAsk(channel, "wrong-secret"))).toMatchObject({
      status: 401,
      code: "webhook_unauthorized",
    });
  });

  it("WhatsApp: a message 'airlock' gets the answer from the business number, only when signed", async () => {
    const person = uniqueChatId();
    expect((await whatsappAsk(person, " Airlock ")).status).toBe(200);
    const messages = await fakes.requests("whatsapp", "messages");
    const to = (id: string) =>
      messages.filter((r) => (r.json as { to?: string } | undefined)?.to === id);
    expect(to(person).map((r) => (r.json as { text?: { body?: string } }).text?.body)).toEqual([
      chatIdText(`whatsapp:${person}`),
    ]);
    const stranger = uniqueChatId();
    expect(await errorOf(await whatsappAsk(stranger, "airlock", "wrong-secret"))).toMatchObject({
      status: 401,
      code: "webhook_unauthorized",
    });
    // Any other text is not the command.
    await whatsappAsk(stranger, "airlock please", WHATSAPP_SECRET);
    const after = await fakes.requests("whatsapp", "messages");
    expect(after.filter((r) => (r.json as { to?: string } | undefined)?.to === stranger)).toEqual(
      [],
    );
  });
});
