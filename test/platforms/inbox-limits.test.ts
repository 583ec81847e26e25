import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { isCleanFileName } from "../../src/names";
import { blobKey } from "../../src/storage";
import { randomBytes, sha256Hex } from "../support/bytes";
import { uniqueChatId } from "../support/platform-fakes";
import { RelayClient } from "../support/relay-client";
import {
  client,
  discord,
  discordCommand,
  discordInteraction,
  fakes,
  inboxOf,
  nextUpdateId,
  sessionFor,
  slackEvent,
  SLACK_SECRET,
  telegramWebhook,
  type TelegramRef,
} from "./inbox-harness";

/** The name rule and the size limits at every inbound door. */
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
        update_id: nextUpdateId(),
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
