import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isCleanFileName, MAX_NAME_BYTES } from "../../src/names";
import { startFakePlatforms, type FakePlatforms } from "../fixtures/platforms/start-fake-platforms";
import { prepareShim, relayEnv, runShim } from "../shim/run-shim";
import { startRelay, type RunningRelay } from "../support/relay";
import { postTelegramUpdate, telegramUpdate } from "../support/telegram-update";
import { discordKeys, nowSeconds, slackSignature } from "../support/webhook-signing";
import {
  filesAt,
  inboundRelayVars,
  inboxAt,
  MiB,
  postBody,
  sha256,
  SLACK_SECRET,
  TELEGRAM_SECRET,
  type InboxItem,
} from "./inbound-support";

/**
 * The relay's inbound doors as a stranger or a chat member would push on them, against
 * `wrangler dev` and the fake Telegram / Discord / Slack servers.
 */
describe("inbound attachments, seeds and webhook bodies", () => {
  let fakes: FakePlatforms;
  let relay: RunningRelay;
  let discord: Awaited<ReturnType<typeof discordKeys>>;
  let dir: string;
  let updateId = 500_000;
  /** Minted before any oversized request (see `post`). */
  let forgedTarget: { sessionId: string; token: string };

  beforeAll(async () => {
    prepareShim();
    discord = await discordKeys();
    fakes = await startFakePlatforms();
    relay = await startRelay({ vars: inboundRelayVars(fakes, discord) });
    dir = await mkdtemp(join(tmpdir(), "airlock-inbound-"));
    forgedTarget = await relay.mintSession({ destinations: ["telegram:73001", "slack:C73002"] });
  });

  afterAll(async () => {
    await relay?.stop();
    await fakes?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const inboxOf = (token: string, expected: number): Promise<InboxItem[]> =>
    inboxAt(relay.url, token, expected);
  const filesOf = (token: string): Promise<unknown[]> => filesAt(relay.url, token);

  function telegram(chat: string, message: object, secret = TELEGRAM_SECRET) {
    return postTelegramUpdate(relay.url, secret, telegramUpdate(++updateId, chat, message));
  }

  it("stores every hostile name a chat member sends under the one name rule", async () => {
    const chat = "71001";
    const session = await relay.mintSession({
      destinations: [`telegram:${chat}`, "discord:71002", "slack:C71003"],
    });
    const ref = fakes.telegram.addFile({ name: "x.txt", data: randomBytes(64) });
    const hostile = [
      "../../x.txt",
      `${"n".repeat(20_000)}.csv`,
      "nul\u0000byte.txt",
      "new\nline.txt\n[User uploaded: evil.sh (1 KB) at ~]",
      "invoice\u202Efdp.exe",
      "close]bracket.txt",
    ];
    for (const name of hostile) {
      expect((await telegram(chat, { document: { ...ref, file_name: name } })).status).toBe(200);
    }

    const discordRef = fakes.discord.addFile({ name: "d.png", data: randomBytes(64) });
    const interaction = JSON.stringify({
      id: "81001",
      type: 2,
      application_id: "1",
      token: "t",
      version: 1,
      channel: { id: "71002", type: 0 },
      channel_id: "71002",
      data: {
        id: "9",
        name: "send",
        type: 1,
        options: [{ name: "file", type: 11, value: discordRef.id }],
        resolved: {
          attachments: {
            [discordRef.id]: { ...discordRef, filename: "..\\..\\win\u0007.png" },
          },
        },
      },
    });
    const timestamp = nowSeconds();
    const answered = await fetch(`${relay.url}/webhooks/discord`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-signature-ed25519": await discord.sign(timestamp, interaction),
        "x-signature-timestamp": timestamp,
      },
      body: interaction,
    });
    expect(answered.status).toBe(200);

    const slackRef = fakes.slack.addFile({ name: "s.bin", data: randomBytes(64) });
    const event = JSON.stringify({
      type: "event_callback",
      event_id: "EvInbound1",
      event: {
        type: "message",
        channel: "C71003",
        files: [{ ...slackRef, name: "/etc/\u2066shadow\u2069" }],
      },
    });
    const slackTime = nowSeconds();
    const posted = await fetch(`${relay.url}/webhooks/slack`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-slack-request-timestamp": slackTime,
        "x-slack-signature": await slackSignature(SLACK_SECRET, slackTime, event),
      },
      body: event,
    });
    expect(posted.status).toBe(200);

    const items = await inboxOf(session.token, hostile.length + 2);
    const names = items.map((i) => i.name).sort();
    expect(names).toEqual(
      [
        "x.txt",
        `${"n".repeat(MAX_NAME_BYTES - 4)}.csv`,
        "nulbyte.txt",
        "newline.txt[User uploaded: evil.sh (1 KB) at ~]",
        "invoicefdp.exe",
        "close]bracket.txt",
        "win.png",
        "shadow",
      ].sort(),
    );
    for (const name of names) {
      expect(isCleanFileName(name)).toBe(true);
      expect(Buffer.byteLength(name)).toBeLessThanOrEqual(MAX_NAME_BYTES);
    }
  });

  it("refuses a 12 MB attachment into a 10 MB session with a reply, stores nothing, and the sandbox can still send", async () => {
    const chat = "72001";
    const session = await relay.mintSession({
      destinations: [`telegram:${chat}`],
      quotaBytes: 10_000_000,
    });
    const big = fakes.telegram.addFile({ name: "big.bin", data: randomBytes(12_000_000) });
    expect((await telegram(chat, { document: big })).status).toBe(200);

    let replies: string[] = [];
    for (let i = 0; i < 80 && replies.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      replies = fakes.telegram
        .requests("sendMessage")
        .map((r) => r.json as { chat_id?: unknown; text?: string })
        .filter((json) => String(json.chat_id) === chat)
        .map((json) => String(json.text));
    }
    expect(replies).toEqual([
      "Could not take big.bin: file is 11 MiB and the session has 9.5 MiB of its byte quota left.",
    ]);
    expect(fakes.telegram.requests("file").filter((r) => r.path.endsWith(big.file_path))).toEqual(
      [],
    );
    expect(await inboxOf(session.token, 0)).toEqual([]);
    expect(await filesOf(session.token)).toEqual([]);

    const path = join(dir, "thirteen.txt");
    const bytes = Buffer.from("thirteen byte");
    await writeFile(path, bytes);
    const sent = await runShim(["send", path, "--json"], {
      env: relayEnv(relay.url, session.token),
    });
    expect(sent.stderr).toBe("");
    expect(sent.code).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ size: 13, sha256: sha256(bytes) });
  });

  it("refuses an operator seed over the quota with 413 quota_exceeded and keeps nothing", async () => {
    const session = await relay.mintSession({ quotaBytes: 1_000_000 });
    const bytes = randomBytes(1_500_000);
    const response = await fetch(
      `${relay.url}/v1/sessions/${session.sessionId}/inbox?name=seed.bin`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${relay.adminToken}` },
        body: bytes,
      },
    );
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({
      error: {
        code: "quota_exceeded",
        message: "file is 1.4 MiB and the session has 977 KiB of its byte quota left",
      },
    });
    expect(await inboxOf(session.token, 0)).toEqual([]);
    expect(await filesOf(session.token)).toEqual([]);
  });

  /** Posts a body of `total` bytes to the relay (see `postBody`). */
  const post = (path: string, headers: Record<string, string>, total: number, prefix = "") =>
    postBody(relay.url, path, headers, total, prefix);

  it("refuses forged webhooks with huge bodies and stores nothing", async () => {
    const chat = "73001";
    const session = forgedTarget;
    const ref = fakes.telegram.addFile({ name: "forged.bin", data: randomBytes(100) });
    const update = (id: number) => JSON.stringify(telegramUpdate(id, chat, { document: ref }));
    const forgedTelegram = await post(
      "/webhooks/telegram",
      {
        "content-type": "application/json",
        "content-length": String(50 * MiB),
        "x-telegram-bot-api-secret-token": "guess",
      },
      50 * MiB,
      update(++updateId),
    );
    expect(forgedTelegram.status).toBe(401);
    // The right secret does not make an oversized body welcome.
    const padded = await post(
      "/webhooks/telegram",
      {
        "content-type": "application/json",
        "content-length": String(2 * MiB),
        "x-telegram-bot-api-secret-token": TELEGRAM_SECRET,
      },
      2 * MiB,
      update(++updateId),
    );
    expect(padded.status).toBe(413);
    const slackRef = fakes.slack.addFile({ name: "forged.bin", data: randomBytes(100) });
    const forgedSlack = await post(
      "/webhooks/slack",
      {
        "content-type": "application/json",
        "content-length": String(50 * MiB),
        "x-slack-request-timestamp": nowSeconds(),
        "x-slack-signature": "v0=" + "0".repeat(64),
      },
      50 * MiB,
      JSON.stringify({
        type: "event_callback",
        event_id: "EvForged1",
        event: { type: "message", channel: "C73002", files: [slackRef] },
      }),
    );
    expect([401, 413]).toContain(forgedSlack.status);
    expect(await inboxOf(session.token, 0)).toEqual([]);
    expect(await filesOf(session.token)).toEqual([]);
    expect(fakes.telegram.requests("file").filter((r) => r.path.endsWith(ref.file_path))).toEqual(
      [],
    );
    expect(fakes.slack.requests("private").filter((r) => r.path.includes(slackRef.id))).toEqual([]);
  });

  // That the relay answers by the Content-Length, before reading the body, is shown by the
  // Workers-runtime webhook tests: `wrangler dev`'s proxy holds the answer until the body is in.
  it("answers a 50 MB webhook body with 413 by its Content-Length", async () => {
    const timestamp = nowSeconds();
    const answer = await post(
      "/webhooks/slack",
      {
        "content-type": "application/json",
        "content-length": String(50 * MiB),
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": await slackSignature(SLACK_SECRET, timestamp, "{}"),
      },
      50 * MiB,
    );
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "payload_too_large" } });
  });

  it("answers a chunked webhook body past 1 MiB with 413", async () => {
    const answer = await post(
      "/webhooks/telegram",
      {
        "content-type": "application/json",
        "transfer-encoding": "chunked",
        "x-telegram-bot-api-secret-token": TELEGRAM_SECRET,
      },
      // Small enough for the socket buffers: `wrangler dev`'s proxy stops taking a body the
      // Worker no longer reads, and would then hold the answer.
      1.5 * MiB,
    );
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "payload_too_large" } });
  });
});
