import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";
import type { FileRecord, InboxRecord } from "../../src/wire-types";
import { startFakePlatforms, type FakePlatforms } from "../fixtures/platforms/start-fake-platforms";
import { startRelay, type RunningRelay } from "../support/relay";
import { waitForEvents } from "../support/relay-log";
import { postTelegramUpdate, telegramUpdate } from "../support/telegram-update";
import { nowSeconds, slackSignature } from "../support/webhook-signing";

/**
 * The chat side of the relay as a chat member or a sandbox of another owner would push on it,
 * against `wrangler dev` and the fake Telegram / Slack / WhatsApp servers.
 */
const TELEGRAM_SECRET = "chat-review-telegram-secret";
const SLACK_SECRET = "chat-review-slack-secret";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

describe("chat platforms: scopes, captions and attachment hosts", () => {
  let fakes: FakePlatforms;
  let relay: RunningRelay;
  /** A server that records every request and the bearer token it carried. */
  let trap: http.Server;
  let trapped: string[] = [];
  let trapHost: string;
  let updateId = 900_000;
  let eventSeq = 0;

  beforeAll(async () => {
    fakes = await startFakePlatforms();
    trap = http.createServer((req, res) => {
      trapped.push(`${req.url} ${req.headers.authorization ?? ""}`);
      res.writeHead(200, { "content-length": "3" }).end("bad");
    });
    await new Promise<void>((resolve) => trap.listen(0, "127.0.0.1", resolve));
    trapHost = `127.0.0.1:${(trap.address() as AddressInfo).port}`;
    relay = await startRelay({
      vars: {
        TELEGRAM_BOT_TOKEN: fakes.telegram.token,
        TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
        TELEGRAM_API_ROOT: fakes.telegram.url,
        SLACK_BOT_TOKEN: fakes.slack.token,
        SLACK_SIGNING_SECRET: SLACK_SECRET,
        SLACK_API_URL: fakes.slack.url,
        SLACK_FILE_HOSTS: new URL(fakes.slack.url).host,
        WHATSAPP_ACCESS_TOKEN: fakes.whatsapp.token,
        WHATSAPP_PHONE_NUMBER_ID: fakes.whatsapp.phoneNumberId,
        WHATSAPP_API_BASE: fakes.whatsapp.url,
      },
    });
  });

  afterAll(async () => {
    await relay?.stop();
    await fakes?.stop();
    await new Promise((resolve) => trap?.close(resolve));
  });

  function api(token: string, path: string, init: RequestInit = {}) {
    return fetch(`${relay.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
    });
  }

  async function inboxOf(token: string, expected: number): Promise<InboxRecord[]> {
    // The relay fetches attachments in the background after answering the webhook.
    for (let i = 0; ; i++) {
      const { items } = (await (await api(token, "/v1/inbox")).json()) as {
        items: InboxRecord[];
      };
      if (items.length >= expected || i >= 60) return items;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /** Seeds `bytes` into a session's inbox as the operator; returns the stored file. */
  async function seed(sessionId: string, bytes: Uint8Array, name: string): Promise<FileRecord> {
    const response = await fetch(
      `${relay.url}/v1/sessions/${sessionId}/inbox?name=${encodeURIComponent(name)}`,
      { method: "POST", headers: { authorization: `Bearer ${relay.adminToken}` }, body: bytes },
    );
    expect(response.status).toBe(201);
    return ((await response.json()) as InboxRecord).file;
  }

  function telegram(chat: string, message: object) {
    return postTelegramUpdate(
      relay.url,
      TELEGRAM_SECRET,
      telegramUpdate(++updateId, chat, message),
    );
  }

  async function slack(event: object) {
    const body = JSON.stringify({
      type: "event_callback",
      event_id: `EvChatReview${++eventSeq}`,
      event,
    });
    const timestamp = nowSeconds();
    return fetch(`${relay.url}/webhooks/slack`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": await slackSignature(SLACK_SECRET, timestamp, body),
      },
      body,
    });
  }

  it("never tells a session, through a chat attachment's record, that another owner holds the content", async () => {
    const other = await relay.mintSession({ owner: "chat-review-other" });
    const held = randomBytes(4096);
    await seed(other.sessionId, held, "theirs.bin");

    const chat = "94001";
    const mine = await relay.mintSession({
      owner: "chat-review-mine",
      destinations: [`telegram:${chat}`],
    });
    const ref = fakes.telegram.addFile({ name: "probe.bin", data: held });
    expect((await telegram(chat, { document: { ...ref, file_name: "probe.bin" } })).status).toBe(
      200,
    );
    const [item] = await inboxOf(mine.token, 1);
    expect(item?.sha256).toBe(sha256(held));
    expect(item?.file.deduped).toBe(false);
    const record = (await (
      await api(mine.token, `/v1/files/${item!.file.fileId}`)
    ).json()) as FileRecord;
    expect(record).toMatchObject({ sha256: sha256(held), deduped: false });
  });

  it("never tells a sandbox, through a file put to its own upload link, that another owner holds the content", async () => {
    const other = await relay.mintSession({ owner: "chat-review-other" });
    const held = randomBytes(2048);
    await seed(other.sessionId, held, "theirs.bin");

    const mine = await relay.mintSession({ owner: "chat-review-prober" });
    const created = await api(mine.token, "/v1/requests", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(created.status).toBe(201);
    const { url } = (await created.json()) as CreatedRequest;
    const put = await fetch(url, {
      method: "PUT",
      body: held,
      headers: { "content-length": String(held.byteLength) },
    });
    expect(put.status).toBe(201);
    const { files } = (await (await api(mine.token, "/v1/files")).json()) as {
      files: FileRecord[];
    };
    expect(files.map((f) => [f.sha256, f.deduped])).toEqual([[sha256(held), false]]);
  });

  it("sends a Slack caption's mentions as text in a native upload, as in a link message", async () => {
    const channel = "C94002";
    const session = await relay.mintSession({ destinations: [`slack:${channel}`] });
    const file = await seed(session.sessionId, randomBytes(500), "notes.bin");
    const caption = "<!channel> <@U0FAKE123> read this & that";
    const delivered = await api(session.token, `/v1/files/${file.fileId}/deliveries`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ to: `slack:${channel}`, caption }),
    });
    expect(delivered.status).toBe(201);
    expect(await delivered.json()).toMatchObject({ mode: "native", status: "delivered" });
    const completes = fakes.slack
      .requests("files.completeUploadExternal")
      .filter((r) => r.fields.channel_id === channel);
    expect(completes.map((r) => r.fields.initial_comment)).toEqual([
      "&lt;!channel&gt; &lt;@U0FAKE123&gt; read this &amp; that",
    ]);
  });

  it("never fetches a Slack file from a URL off the file hosts, nor sends the bot token there", async () => {
    trapped = [];
    const channel = "C94003";
    const session = await relay.mintSession({ destinations: [`slack:${channel}`] });
    const fakeHost = new URL(fakes.slack.url).host;
    const urls = [
      `http://${trapHost}/files-pri/T1-F1/x.bin`,
      `http://${fakeHost}@${trapHost}/files-pri/T1-F2/x.bin`,
      `http://[::ffff:127.0.0.1]:${trapHost.split(":")[1]}/files-pri/T1-F3/x.bin`,
      `file:///etc/passwd`,
    ];
    for (const [index, url] of urls.entries()) {
      const answer = await slack({
        type: "message",
        channel,
        ts: `1700000000.00010${index}`,
        files: [
          { id: `FREVIEW${index}`, name: `x${index}.bin`, size: 3, url_private_download: url },
        ],
      });
      expect(answer.status).toBe(200);
    }
    // The same channel's genuine file arrives: the refusals above are the hosts' doing.
    const genuine = randomBytes(300);
    const ref = fakes.slack.addFile({ name: "genuine.bin", data: genuine });
    expect(
      (await slack({ type: "message", channel, ts: "1700000000.000200", files: [ref] })).status,
    ).toBe(200);
    const items = await inboxOf(session.token, 1);
    // Each hostile URL's fetch ran and was refused.
    await waitForEvents(
      relay,
      "attachment_fetch_failed",
      { chat: `slack:${channel}` },
      urls.length,
    );
    expect(trapped).toEqual([]);
    expect(items.map((i) => [i.name, i.sha256])).toEqual([["genuine.bin", sha256(genuine)]]);
    expect(await inboxOf(session.token, 0)).toHaveLength(1);
  });

  it("puts a chat's attachment only in the session bound to it, and a replay in no newer one", async () => {
    const chat = "94004";
    const bound = await relay.mintSession({
      owner: "chat-review-bound",
      destinations: [`telegram:${chat}`],
    });
    const elsewhere = await relay.mintSession({
      owner: "chat-review-elsewhere",
      destinations: ["telegram:94005"],
    });
    const bytes = randomBytes(700);
    const ref = fakes.telegram.addFile({ name: "only.bin", data: bytes });
    const update = telegramUpdate(++updateId, chat, { document: ref });
    const post = () => postTelegramUpdate(relay.url, TELEGRAM_SECRET, update);
    expect((await post()).status).toBe(200);
    expect((await inboxOf(bound.token, 1)).map((i) => i.sha256)).toEqual([sha256(bytes)]);
    // A newer session for the same chat: the replayed update is not stored again for it.
    const newer = await relay.mintSession({
      owner: "chat-review-newer",
      destinations: [`telegram:${chat}`],
    });
    expect((await post()).status).toBe(200);
    await waitForEvents(relay, "attachment_duplicate", { chat: `telegram:${chat}` });
    expect(await inboxOf(newer.token, 0)).toEqual([]);
    expect(await inboxOf(elsewhere.token, 0)).toEqual([]);
    expect(await inboxOf(bound.token, 0)).toHaveLength(1);
  });

  it("reuses a WhatsApp media id only within its owner scope", async () => {
    const [wa1, wa2, wa3] = ["15559400001", "15559400002", "15559400003"];
    const bytes = randomBytes(3000);
    const deliver = async (owner: string, to: string) => {
      const session = await relay.mintSession({ owner, destinations: [`whatsapp:${to}`] });
      const file = await seed(session.sessionId, bytes, "report.bin");
      const answer = await api(session.token, `/v1/files/${file.fileId}/deliveries`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ to: `whatsapp:${to}` }),
      });
      expect(answer.status).toBe(201);
      return ((await answer.json()) as { uploadedBytes: number }).uploadedBytes;
    };
    const mediaIdTo = (to: string) =>
      fakes.whatsapp
        .requests("messages")
        .map((r) => r.json as { to?: string; document?: { id: string } })
        .find((json) => json.to === to)?.document?.id;
    expect(await deliver("chat-review-wa-a", wa1)).toBe(3000);
    expect(await deliver("chat-review-wa-a", wa2)).toBe(0);
    expect(await deliver("chat-review-wa-b", wa3)).toBe(3000);
    const uploads = fakes.whatsapp
      .requests("media")
      .filter((r) => r.files.some((f) => f.sha256 === sha256(bytes)));
    expect(uploads).toHaveLength(2);
    expect(mediaIdTo(wa2)).toBe(mediaIdTo(wa1));
    expect(mediaIdTo(wa3)).not.toBe(mediaIdTo(wa1));
  });
});
