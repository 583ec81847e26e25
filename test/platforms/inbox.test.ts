import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { InboxRecord } from "../../src/services/inbox";
import { randomBytes, sha256Hex } from "../support/bytes";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { ADMIN_TOKEN, errorOf, RelayClient } from "../support/relay-client";
import { discordKeys, nowSeconds, slackSignature } from "../support/webhook-signing";

const fakes = new PlatformFakes();
const SLACK_SECRET = "slack-secret-for-inbox-tests";
const discord = await discordKeys();
const client = new RelayClient(
  fakes.env(env, { DISCORD_PUBLIC_KEY: discord.publicKeyHex, SLACK_SIGNING_SECRET: SLACK_SECRET }),
);

interface TelegramRef {
  file_id: string;
  file_unique_id: string;
  file_size: number;
}

async function inboxOf(token: string): Promise<InboxRecord[]> {
  return (
    (await (await client.call("GET", "/v1/inbox", { token })).json()) as { items: InboxRecord[] }
  ).items;
}

async function contentOf(token: string, item: InboxRecord): Promise<string> {
  const response = await client.call("GET", `/v1/files/${item.file.fileId}/content`, { token });
  return sha256Hex(await response.arrayBuffer());
}

let updateId = Math.floor(Math.random() * 1e9);
function telegramWebhook(chatId: string, message: object, id = ++updateId) {
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

async function sessionFor(destination: string) {
  return client.mintSession({ destinations: [destination] });
}

describe("receiving from Telegram", () => {
  it("puts a document in the bound session's inbox, byte-exact, until it is acked", async () => {
    const chat = uniqueChatId();
    const { token } = await sessionFor(`telegram:${chat}`);
    const bytes = randomBytes(250_000);
    const ref = await fakes.addFile<TelegramRef>("telegram", "report.csv", bytes, "text/csv");
    const answer = await telegramWebhook(chat, {
      document: { ...ref, file_name: "report.csv", mime_type: "text/csv" },
    });
    expect(answer.status).toBe(200);
    const [item] = await inboxOf(token);
    expect(item).toMatchObject({
      name: "report.csv",
      size: 250_000,
      source: `telegram:${chat}`,
      contentType: "text/csv",
    });
    expect(await contentOf(token, item!)).toBe(await sha256Hex(bytes));
    const ack = await client.call("POST", `/v1/inbox/${item!.itemId}/ack`, { token });
    expect(ack.status).toBe(200);
    expect(await inboxOf(token)).toEqual([]);
  });

  it("takes the largest size of a photo", async () => {
    const chat = uniqueChatId();
    const { token } = await sessionFor(`telegram:${chat}`);
    const small = await fakes.addFile<TelegramRef>("telegram", "s.jpg", randomBytes(100));
    const large = randomBytes(5000);
    const big = await fakes.addFile<TelegramRef>("telegram", "l.jpg", large);
    await telegramWebhook(chat, {
      photo: [
        { ...small, width: 90, height: 90 },
        { ...big, width: 1280, height: 960 },
      ],
    });
    const [item] = await inboxOf(token);
    expect(item?.size).toBe(5000);
    expect(await contentOf(token, item!)).toBe(await sha256Hex(large));
  });

  it("stores a redelivered update once", async () => {
    const chat = uniqueChatId();
    const { token } = await sessionFor(`telegram:${chat}`);
    const ref = await fakes.addFile<TelegramRef>("telegram", "a.txt", randomBytes(10));
    await telegramWebhook(chat, { document: ref }, 777_000_001);
    await telegramWebhook(chat, { document: ref }, 777_000_001);
    expect(await inboxOf(token)).toHaveLength(1);
  });

  it("replies in the chat when a file is over the bots' 20 MB download limit, and stores nothing", async () => {
    const chat = uniqueChatId();
    const { token } = await sessionFor(`telegram:${chat}`);
    await telegramWebhook(chat, {
      document: {
        file_id: "huge",
        file_unique_id: "h",
        file_size: 25_000_000,
        file_name: "video.mov",
      },
    });
    expect(await inboxOf(token)).toEqual([]);
    const replies = (await fakes.requests("telegram", "sendMessage")).filter(
      (r) => String((r.json as { chat_id?: unknown }).chat_id) === chat,
    );
    expect(String((replies[0]?.json as { text: string }).text)).toContain(
      "Could not take video.mov",
    );
  });

  it("drops attachments from a chat no live session is bound to", async () => {
    const chat = uniqueChatId();
    const ref = await fakes.addFile<TelegramRef>("telegram", "x.bin", randomBytes(10));
    expect((await telegramWebhook(chat, { document: ref })).status).toBe(200);
    const count = await env.DB.prepare("SELECT COUNT(*) AS n FROM inbox WHERE source = ?")
      .bind(`telegram:${chat}`)
      .first<{ n: number }>();
    expect(count?.n).toBe(0);
  });

  it("retries a failed download, and records a failure until a later poll fetches it", async () => {
    const chat = uniqueChatId();
    const { token } = await sessionFor(`telegram:${chat}`);
    const bytes = randomBytes(1000);
    const ref = await fakes.addFile<TelegramRef>("telegram", "flaky.bin", bytes);
    await fakes.fault("telegram", {
      method: "file",
      times: 1,
      response: { status: 502, body: "bad gateway" },
    });
    await telegramWebhook(chat, { document: { ...ref, file_name: "flaky.bin" } });
    expect((await inboxOf(token)).map((i) => i.name)).toEqual(["flaky.bin"]);

    const second = await fakes.addFile<TelegramRef>("telegram", "later.bin", bytes.slice(0, 500));
    await fakes.fault("telegram", {
      method: "file",
      times: 3,
      response: { status: 500, body: "down" },
    });
    await telegramWebhook(chat, { document: { ...second, file_name: "later.bin" } });
    const failed = await env.DB.prepare(
      "SELECT status, attempts, error FROM inbox WHERE name = 'later.bin' AND source = ?",
    )
      .bind(`telegram:${chat}`)
      .first<{ status: string; attempts: number; error: string }>();
    expect(failed).toMatchObject({ status: "failed", attempts: 3 });
    expect(failed?.error).toContain("500");
    await inboxOf(token); // the poll retries in the background
    expect((await inboxOf(token)).map((i) => i.name)).toEqual(["flaky.bin", "later.bin"]);
  });
});

describe("receiving from Discord", () => {
  async function interaction(body: object) {
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

  function command(
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

  it("answers a slash command with an attachment at once and fetches it into the inbox", async () => {
    const channel = uniqueChatId();
    const { token } = await sessionFor(`discord:${channel}`);
    const bytes = randomBytes(40_000);
    const ref = await fakes.addFile<{ id: string; filename: string; size: number; url: string }>(
      "discord",
      "plot.png",
      bytes,
    );
    const response = await interaction(command(channel, ref));
    expect(await response.json()).toMatchObject({
      type: 4,
      data: { content: expect.stringContaining("plot.png") },
    });
    const [item] = await inboxOf(token);
    expect(item).toMatchObject({ name: "plot.png", size: 40_000, source: `discord:${channel}` });
    expect(await contentOf(token, item!)).toBe(await sha256Hex(bytes));
  });

  it("never fetches from a host outside the platform's allow-list", async () => {
    const channel = uniqueChatId();
    const { token } = await sessionFor(`discord:${channel}`);
    const evil = {
      id: "5",
      filename: "evil.bin",
      size: 10,
      url: "http://169.254.169.254/latest/meta-data",
    };
    await interaction(command(channel, evil));
    expect(await inboxOf(token)).toEqual([]);
    const row = await env.DB.prepare("SELECT status, error, attempts FROM inbox WHERE source = ?")
      .bind(`discord:${channel}`)
      .first<{ status: string; error: string; attempts: number }>();
    expect(row?.status).toBe("failed");
    expect(row?.error).toContain("not one of the platform's hosts");
    // A refusal is final: no retries now, nor when the sandbox polls again.
    expect(row?.attempts).toBe(5);
    await inboxOf(token);
    const after = await env.DB.prepare("SELECT attempts FROM inbox WHERE source = ?")
      .bind(`discord:${channel}`)
      .first<{ attempts: number }>();
    expect(after?.attempts).toBe(5);
  });
});

describe("receiving from Slack", () => {
  async function event(body: object) {
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
  type SlackRef = {
    id: string;
    name: string;
    size: number;
    url_private: string;
    url_private_download: string;
  };

  it("downloads the files of a message event with the bot token", async () => {
    const channel = `C${uniqueChatId()}`;
    const { token } = await sessionFor(`slack:${channel}`);
    const bytes = randomBytes(33_333);
    const ref = await fakes.addFile<SlackRef>("slack", "data.json", bytes, "application/json");
    const response = await event({
      type: "event_callback",
      event_id: `Ev${uniqueChatId()}`,
      event: {
        type: "message",
        subtype: "file_share",
        channel,
        files: [{ ...ref, mimetype: "application/json" }],
      },
    });
    expect(response.status).toBe(200);
    const [item] = await inboxOf(token);
    expect(item).toMatchObject({
      name: "data.json",
      size: 33_333,
      contentType: "application/json",
    });
    expect(await contentOf(token, item!)).toBe(await sha256Hex(bytes));
    const downloads = (await fakes.requests("slack", "private")).filter((r) =>
      r.path.includes(ref.id),
    );
    expect(downloads[0]?.authorization).toMatchObject({ scheme: "Bearer", valid: true });
  });

  it("looks up a file_shared event's file with files.info", async () => {
    const channel = `C${uniqueChatId()}`;
    const { token } = await sessionFor(`slack:${channel}`);
    const bytes = randomBytes(999);
    const ref = await fakes.addFile<SlackRef>("slack", "shared.bin", bytes);
    await event({
      type: "event_callback",
      event_id: `Ev${uniqueChatId()}`,
      event: { type: "file_shared", channel_id: channel, file_id: ref.id },
    });
    const [item] = await inboxOf(token);
    expect(item?.size).toBe(999);
    expect(await contentOf(token, item!)).toBe(await sha256Hex(bytes));
  });
});

describe("POST /v1/sessions/:id/inbox", () => {
  it("seeds a file the sandbox then finds in its inbox", async () => {
    const { sessionId, token } = await client.mintSession();
    const bytes = randomBytes(12_000);
    const seeded = await client.call(
      "POST",
      `/v1/sessions/${sessionId}/inbox?name=${encodeURIComponent("input data.csv")}`,
      {
        token: ADMIN_TOKEN,
        body: bytes,
        headers: { "content-type": "text/csv", "content-length": String(bytes.byteLength) },
      },
    );
    expect(seeded.status).toBe(201);
    const [item] = await inboxOf(token);
    expect(item).toMatchObject({ name: "input data.csv", source: "operator", size: 12_000 });
    expect(await contentOf(token, item!)).toBe(await sha256Hex(bytes));
  });

  it("refuses a sandbox token, a bad name and another session's ack", async () => {
    const alice = await client.mintSession();
    const bob = await client.mintSession();
    const body = new Uint8Array(3);
    expect(
      (
        await client.call("POST", `/v1/sessions/${alice.sessionId}/inbox?name=a`, {
          token: alice.token,
          body,
        })
      ).status,
    ).toBe(403);
    expect(
      await errorOf(
        await client.call("POST", `/v1/sessions/${alice.sessionId}/inbox?name=..`, {
          token: ADMIN_TOKEN,
          body,
        }),
      ),
    ).toMatchObject({
      status: 400,
      code: "invalid_request",
    });
    await client.call("POST", `/v1/sessions/${alice.sessionId}/inbox?name=a.bin`, {
      token: ADMIN_TOKEN,
      body,
      headers: { "content-length": "3" },
    });
    const [item] = await inboxOf(alice.token);
    expect(
      await errorOf(
        await client.call("POST", `/v1/inbox/${item!.itemId}/ack`, { token: bob.token }),
      ),
    ).toMatchObject({
      status: 404,
      code: "inbox_item_not_found",
    });
  });
});
