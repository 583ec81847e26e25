import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { randomBytes, sha256Hex } from "../support/bytes";
import { uniqueChatId } from "../support/platform-fakes";
import {
  client,
  contentOf,
  fakes,
  inboxOf,
  sessionFor,
  telegramWebhook,
  type TelegramRef,
} from "./inbox-harness";

/** Files sent to the relay's Telegram bot, into the bound session's inbox. */
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
