import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { isCleanFileName } from "../../src/names";
import type { InboxRecord } from "../../src/services/inbox/inbox";
import { blobKey } from "../../src/storage";
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
  file_path: string;
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
    // Each fault names its own file's path: the fake is shared with test files running at the same time.
    await fakes.fault("telegram", {
      method: "file",
      match: { path: ref.file_path },
      times: 1,
      response: { status: 502, body: "bad gateway" },
    });
    await telegramWebhook(chat, { document: { ...ref, file_name: "flaky.bin" } });
    expect((await inboxOf(token)).map((i) => i.name)).toEqual(["flaky.bin"]);

    const second = await fakes.addFile<TelegramRef>("telegram", "later.bin", bytes.slice(0, 500));
    await fakes.fault("telegram", {
      method: "file",
      match: { path: second.file_path },
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

  it("fetches again after a failed download, but never after the relay refused the file", async () => {
    const chat = uniqueChatId();
    const { sessionId, token } = await client.mintSession({
      destinations: [`telegram:${chat}`],
      quotaBytes: 50_000,
    });
    const bytes = randomBytes(2000);
    const flaky = await fakes.addFile<TelegramRef>("telegram", "flaky.bin", bytes);
    await fakes.fault("telegram", {
      method: "file",
      match: { path: flaky.file_path },
      times: 1,
      response: { status: 503, body: "unavailable" },
    });
    await telegramWebhook(chat, { document: flaky });
    // Under-reported: the quota refuses it once the download's length is known.
    const liar = await fakes.addFile<TelegramRef>("telegram", "liar.bin", randomBytes(60_000));
    await telegramWebhook(chat, { document: { ...liar, file_size: 10 } });
    const downloads = async (path: string) =>
      (await fakes.requests("telegram", "file"))
        .filter((r) => r.path.endsWith(path))
        .map((r) => (r.fault ? "fault" : "served"));
    const rows = async () =>
      (
        await env.DB.prepare(
          "SELECT name, status, attempts FROM inbox WHERE session_id = ? ORDER BY name",
        )
          .bind(sessionId)
          .all<{ name: string; status: string; attempts: number }>()
      ).results;
    const outcome = [
      { name: "flaky.bin", status: "ready", attempts: 2 },
      { name: "liar.bin", status: "failed", attempts: 5 },
    ];
    // Both webhooks' fetches have run: the flaky one was retried within its own fetch.
    expect(await rows()).toEqual(outcome);
    expect(await downloads(flaky.file_path)).toEqual(["fault", "served"]);
    expect(await downloads(liar.file_path)).toEqual(["served"]);
    // A poll of the inbox retries failures, but not the refused one.
    const [item, ...others] = await inboxOf(token);
    expect(others).toEqual([]);
    expect(await contentOf(token, item!)).toBe(await sha256Hex(bytes));
    expect(await rows()).toEqual(outcome);
    expect(await downloads(liar.file_path)).toEqual(["served"]);
  });
});

async function discordInteraction(body: object) {
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

function discordCommand(
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

describe("receiving from Discord", () => {
  it("never fetches from a host outside the platform's allow-list", async () => {
    const channel = uniqueChatId();
    const { token } = await sessionFor(`discord:${channel}`);
    const evil = {
      id: "5",
      filename: "evil.bin",
      size: 10,
      url: "http://169.254.169.254/latest/meta-data",
    };
    await discordInteraction(discordCommand(channel, evil));
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

async function slackEvent(body: object) {
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
describe("receiving from Slack", () => {
  type SlackRef = {
    id: string;
    name: string;
    size: number;
    url_private: string;
    url_private_download: string;
  };

  it("looks up a file_shared event's file with files.info", async () => {
    const channel = `C${uniqueChatId()}`;
    const { token } = await sessionFor(`slack:${channel}`);
    const bytes = randomBytes(999);
    const ref = await fakes.addFile<SlackRef>("slack", "shared.bin", bytes);
    await slackEvent({
      type: "event_callback",
      event_id: `Ev${uniqueChatId()}`,
      event: { type: "file_shared", channel_id: channel, file_id: ref.id },
    });
    const [item] = await inboxOf(token);
    expect(item?.size).toBe(999);
    expect(await contentOf(token, item!)).toBe(await sha256Hex(bytes));
  });

  it("takes a file once when Slack sends its share as both a message and a file_shared event", async () => {
    const channel = `C${uniqueChatId()}`;
    const { token } = await sessionFor(`slack:${channel}`);
    const bytes = randomBytes(700);
    const ref = await fakes.addFile<SlackRef>("slack", "once.bin", bytes);
    const share = async (event: object) =>
      (await slackEvent({ type: "event_callback", event_id: `Ev${uniqueChatId()}`, event })).status;
    expect(await share({ type: "message", subtype: "file_share", channel, files: [ref] })).toBe(
      200,
    );
    expect(await share({ type: "file_shared", channel_id: channel, file_id: ref.id })).toBe(200);
    const items = await inboxOf(token);
    expect(items.map((item) => item.name)).toEqual(["once.bin"]);
    expect(await contentOf(token, items[0]!)).toBe(await sha256Hex(bytes));
  });

  it("takes no file_shared event for a file the relay's own bot shared (a delivery)", async () => {
    const channel = `C${uniqueChatId()}`;
    const { token } = await sessionFor(`slack:${channel}`);
    const ref = await fakes.addFile<SlackRef>("slack", "delivered.bin", randomBytes(500));
    const infoCalls = async () =>
      (await fakes.requests("slack", "files.info")).filter((r) =>
        JSON.stringify(r).includes(ref.id),
      );
    const response = await slackEvent({
      type: "event_callback",
      event_id: `Ev${uniqueChatId()}`,
      // Slack names the app's bot user among the event's authorizations; a file_shared
      // event carries no bot_id, only the sharing user's id.
      authorizations: [{ team_id: "T1", user_id: "UAIRLOCKBOT", is_bot: true }],
      event: { type: "file_shared", channel_id: channel, file_id: ref.id, user_id: "UAIRLOCKBOT" },
    });
    expect(response.status).toBe(200);
    expect(await inboxOf(token)).toEqual([]);
    expect(await infoCalls()).toEqual([]);
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

  it("refuses a sandbox token and another session's ack; cleans a bad name", async () => {
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
    const cleaned = await client.call(
      "POST",
      `/v1/sessions/${alice.sessionId}/inbox?name=${encodeURIComponent("../../etc/\u202Epasswd")}`,
      { token: ADMIN_TOKEN, body, headers: { "content-length": "3" } },
    );
    expect(cleaned.status).toBe(201);
    expect(((await cleaned.json()) as { name: string }).name).toBe("passwd");
    const dots = await client.call("POST", `/v1/sessions/${alice.sessionId}/inbox?name=..`, {
      token: ADMIN_TOKEN,
      body,
      headers: { "content-length": "3" },
    });
    expect(((await dots.json()) as { name: string }).name).toBe("file");
    for (const extra of await inboxOf(alice.token)) {
      await client.call("POST", `/v1/inbox/${extra.itemId}/ack`, { token: alice.token });
    }
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

describe("the name rule and the limits at every inbound door", () => {
  const small = new RelayClient(
    fakes.env(env, {
      DISCORD_PUBLIC_KEY: discord.publicKeyHex,
      SLACK_SIGNING_SECRET: SLACK_SECRET,
      MAX_FILE_BYTES: "100000",
    }),
  );

  async function rowsOf(source: string) {
    const { results } = await env.DB.prepare(
      "SELECT name, status, error, attempts, file_id FROM inbox WHERE source = ? ORDER BY created_at, id",
    )
      .bind(source)
      .all<{ name: string; status: string; error: string | null; attempts: number }>();
    return results;
  }

  async function fileCount(sessionId: string): Promise<number> {
    const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM files WHERE session_id = ?")
      .bind(sessionId)
      .first<{ n: number }>();
    return row?.n ?? 0;
  }

  async function telegramReplies(chat: string): Promise<string[]> {
    return (await fakes.requests("telegram", "sendMessage"))
      .filter((r) => String((r.json as { chat_id?: unknown }).chat_id) === chat)
      .map((r) => String((r.json as { text: string }).text));
  }

  async function downloadsOf(path: string): Promise<number> {
    return (await fakes.requests("telegram", "file")).filter((r) => r.path.endsWith(path)).length;
  }

  it("cleans every hostile Telegram name instead of refusing the file", async () => {
    const chat = uniqueChatId();
    const { token } = await sessionFor(`telegram:${chat}`);
    const ref = await fakes.addFile<TelegramRef>("telegram", "x.txt", randomBytes(20));
    const hostile = [
      "../../x.txt",
      `${"a".repeat(20_000)}.txt`,
      "a\u0000b\nc.txt",
      "invoice\u202Efdp.exe",
      "report].pdf",
      "..",
    ];
    for (const name of hostile)
      await telegramWebhook(chat, { document: { ...ref, file_name: name } });
    const names = (await inboxOf(token)).map((i) => i.name);
    expect(names).toEqual([
      "x.txt",
      `${"a".repeat(251)}.txt`,
      "abc.txt",
      "invoicefdp.exe",
      "report].pdf",
      `document-${ref.file_unique_id}`,
    ]);
    expect(names.every((n) => isCleanFileName(n))).toBe(true);
    expect((await rowsOf(`telegram:${chat}`)).map((r) => r.name)).toEqual(names);
  });

  it("skips a Telegram document without a file_id and never names one after undefined", async () => {
    const chat = uniqueChatId();
    const { token } = await sessionFor(`telegram:${chat}`);
    const ref = await fakes.addFile<TelegramRef>("telegram", "anon.bin", randomBytes(30));
    const answer = await telegramWebhook(chat, {
      document: { file_unique_id: "u1", file_name: "lost.txt", file_size: 3 },
    });
    expect(answer.status).toBe(200);
    expect(await rowsOf(`telegram:${chat}`)).toEqual([]);
    await telegramWebhook(chat, { document: { file_id: ref.file_id, file_size: 30 } });
    expect((await inboxOf(token)).map((i) => i.name)).toEqual(["document"]);
  });

  it("refuses a Telegram file over the session's quota before fetching it, and says so in the chat", async () => {
    const chat = uniqueChatId();
    const { sessionId, token } = await client.mintSession({
      destinations: [`telegram:${chat}`],
      quotaBytes: 50_000,
    });
    const ref = await fakes.addFile<TelegramRef>("telegram", "big.bin", randomBytes(60_000));
    expect((await telegramWebhook(chat, { document: ref })).status).toBe(200);
    const message = "file is 59 KiB and the session has 49 KiB of its byte quota left";
    expect(await telegramReplies(chat)).toEqual([`Could not take big.bin: ${message}.`]);
    expect(await rowsOf(`telegram:${chat}`)).toMatchObject([
      { name: "big.bin", status: "failed", error: message, attempts: 5, file_id: null },
    ]);
    expect(await downloadsOf(ref.file_path)).toBe(0);
    expect(await fileCount(sessionId)).toBe(0);
    // Nothing was taken from the quota: a small file still arrives.
    const fits = await fakes.addFile<TelegramRef>("telegram", "fits.txt", randomBytes(40_000));
    await telegramWebhook(chat, { document: fits });
    expect((await inboxOf(token)).map((i) => i.name)).toEqual(["fits.txt"]);
  });

  it("refuses a file the platform under-reported once its download's length is known", async () => {
    const chat = uniqueChatId();
    const { sessionId } = await client.mintSession({
      destinations: [`telegram:${chat}`],
      quotaBytes: 50_000,
    });
    const bytes = randomBytes(60_000);
    const ref = await fakes.addFile<TelegramRef>("telegram", "liar.bin", bytes);
    await telegramWebhook(chat, { document: { ...ref, file_size: 10 } });
    const [row] = await rowsOf(`telegram:${chat}`);
    expect(row).toMatchObject({ status: "failed", attempts: 5, file_id: null });
    expect(row?.error).toBe("file is 59 KiB and the session has 49 KiB of its byte quota left");
    expect(await telegramReplies(chat)).toEqual([`Could not take liar.bin: ${row?.error}.`]);
    expect(await fileCount(sessionId)).toBe(0);
    expect(await env.BUCKET.head(blobKey(await sha256Hex(bytes)))).toBeNull();
  });

  it("refuses a file over MAX_FILE_BYTES with a reply, storing nothing", async () => {
    const chat = uniqueChatId();
    const { sessionId } = await small.mintSession({ destinations: [`telegram:${chat}`] });
    const ref = await fakes.addFile<TelegramRef>("telegram", "huge.bin", randomBytes(150_000));
    await small.call("POST", "/webhooks/telegram", {
      json: {
        update_id: ++updateId,
        message: {
          message_id: 1,
          date: 0,
          chat: { id: Number(chat), type: "private" },
          document: ref,
        },
      },
      headers: { "x-telegram-bot-api-secret-token": "telegram-webhook-secret" },
    });
    expect(await telegramReplies(chat)).toEqual([
      "Could not take huge.bin: file is 146 KiB; the relay takes files up to 98 KiB.",
    ]);
    expect(await downloadsOf(ref.file_path)).toBe(0);
    expect(await fileCount(sessionId)).toBe(0);
  });

  it("refuses a Slack file of unknown size while fetching it, replies in the channel, stores nothing", async () => {
    const channel = `C${uniqueChatId()}`;
    const { sessionId } = await client.mintSession({
      destinations: [`slack:${channel}`],
      quotaBytes: 50_000,
    });
    const bytes = randomBytes(60_000);
    const ref = await fakes.addFile<{ id: string }>("slack", "../secret.csv", bytes);
    await slackEvent({
      type: "event_callback",
      event_id: `Ev${uniqueChatId()}`,
      event: { type: "file_shared", channel_id: channel, file_id: ref.id },
    });
    const [row] = await rowsOf(`slack:${channel}`);
    expect(row).toMatchObject({ status: "failed", attempts: 5, file_id: null });
    expect(row?.error).toBe("file is 59 KiB and the session has 49 KiB of its byte quota left");
    const replies = (await fakes.requests("slack", "chat.postMessage")).filter(
      (r) => r.fields.channel === channel,
    );
    expect(replies.map((r) => r.fields.text)).toEqual([`Could not take ${ref.id}: ${row?.error}.`]);
    expect(await fileCount(sessionId)).toBe(0);
    expect(await env.BUCKET.head(blobKey(await sha256Hex(bytes)))).toBeNull();
  });

  it("escapes a Slack file name in the refusal so it cannot mention the channel", async () => {
    const channel = `C${uniqueChatId()}`;
    await client.mintSession({ destinations: [`slack:${channel}`], quotaBytes: 10 });
    const ref = await fakes.addFile<{ id: string; name: string }>(
      "slack",
      "a.csv",
      randomBytes(100),
    );
    await slackEvent({
      type: "event_callback",
      event_id: `Ev${uniqueChatId()}`,
      event: { type: "message", channel, files: [{ ...ref, name: "<!channel> & co.csv" }] },
    });
    const replies = (await fakes.requests("slack", "chat.postMessage")).filter(
      (r) => r.fields.channel === channel,
    );
    expect(replies.map((r) => r.fields.text)).toEqual([
      "Could not take &lt;!channel&gt; &amp; co.csv: file is 100 B and the session has 10 B of its byte quota left.",
    ]);
  });

  it("cleans Slack file names and stores a replayed event without event_id once", async () => {
    const channel = `C${uniqueChatId()}`;
    const { token } = await sessionFor(`slack:${channel}`);
    const ref = await fakes.addFile<{ id: string; name: string }>(
      "slack",
      "x.csv",
      randomBytes(100),
    );
    const body = {
      type: "event_callback",
      team_id: "T1",
      event: {
        type: "message",
        subtype: "file_share",
        channel,
        ts: "1700000000.000100",
        files: [{ ...ref, name: "..\\..\\evil\u202E.csv" }],
      },
    };
    await slackEvent(body);
    await slackEvent(body);
    expect((await inboxOf(token)).map((i) => i.name)).toEqual(["evil.csv"]);
    expect(await rowsOf(`slack:${channel}`)).toHaveLength(1);
  });

  it("answers a Discord command over the quota with the refusal, and cleans its names", async () => {
    const channel = uniqueChatId();
    const { token } = await client.mintSession({
      destinations: [`discord:${channel}`],
      quotaBytes: 50_000,
    });
    type Ref = { id: string; filename: string; size: number; url: string };
    /** The bot's reply to a command attaching `name` (as the platform names it) of `size` bytes. */
    const replyTo = async (name: string, size: number, filename = name) => {
      const ref = await fakes.addFile<Ref>("discord", name, randomBytes(size));
      const answer = await discordInteraction(discordCommand(channel, { ...ref, filename }));
      return ((await answer.json()) as { data: { content: string } }).data.content;
    };
    expect(await replyTo("big.png", 60_000)).toBe(
      "Could not take big.png: file is 59 KiB and the session has 49 KiB of its byte quota left.",
    );
    await replyTo("ok.png", 100, "../../\u0007ok.png");
    expect((await inboxOf(token)).map((i) => i.name)).toEqual(["ok.png"]);
    // The reply shows a name as it is, not as Discord markdown.
    expect(await replyTo("__init__ ||x||.py", 100)).toBe(
      "Received \\_\\_init\\_\\_ \\|\\|x\\|\\|.py: it will be in the agent's inbox shortly.",
    );
  });
});

describe("POST /v1/sessions/:id/inbox within the session's quota", () => {
  function seed(sessionId: string, name: string, bytes: Uint8Array) {
    return client.call("POST", `/v1/sessions/${sessionId}/inbox?name=${encodeURIComponent(name)}`, {
      token: ADMIN_TOKEN,
      body: bytes,
      headers: { "content-length": String(bytes.byteLength) },
    });
  }

  it("refuses a seed over the quota with 413 quota_exceeded and stores nothing", async () => {
    const { sessionId, token } = await client.mintSession({ quotaBytes: 50_000 });
    expect((await seed(sessionId, "first.bin", randomBytes(30_000))).status).toBe(201);
    const bytes = randomBytes(30_000);
    expect(await errorOf(await seed(sessionId, "second.bin", bytes))).toEqual({
      status: 413,
      code: "quota_exceeded",
      message: "file is 29 KiB and the session has 20 KiB of its byte quota left",
    });
    expect((await inboxOf(token)).map((i) => i.name)).toEqual(["first.bin"]);
    expect(await env.BUCKET.head(blobKey(await sha256Hex(bytes)))).toBeNull();
  });

  it("lets only one of two seeds that together overflow the quota in", async () => {
    const { sessionId, token } = await client.mintSession({ quotaBytes: 50_000 });
    const answers = await Promise.all([
      seed(sessionId, "a.bin", randomBytes(30_000)),
      seed(sessionId, "b.bin", randomBytes(30_000)),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 413]);
    expect(await inboxOf(token)).toHaveLength(1);
  });

  it("cleans a seed's name of bidi overrides, invisible characters and edge spaces", async () => {
    const { sessionId, token } = await client.mintSession();
    expect((await seed(sessionId, " invoice\u202Efdp.exe ", randomBytes(10))).status).toBe(201);
    // Zero-width characters, word joiner, invisible operators, BOM and Unicode tag characters.
    const hidden = "\ufeffre\u200bpo\u200c\u200drt\u2060\u2064.pdf\u{e0001}\u{e0049}\u{e007f}";
    expect((await seed(sessionId, hidden, randomBytes(10))).status).toBe(201);
    expect((await inboxOf(token)).map((i) => i.name)).toEqual(["invoicefdp.exe", "report.pdf"]);
  });
});
