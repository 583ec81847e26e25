import { createHash } from "node:crypto";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakePlatforms, type FakePlatforms } from "../fixtures/platforms/start-fake-platforms";
import { prepareShim, runShim, relayEnv } from "../shim/run-shim";
import { randomBytes } from "../support/bytes";
import { startRelay, type RunningRelay } from "../support/relay";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const TELEGRAM_SECRET = "e2e-telegram-webhook-secret";
/** The fake Bot API reads upload bodies no faster than this: a slow link. */
const SLOW_LINK_BYTES_PER_SECOND = 8_000_000;

/** A real 1×1 PNG, so the relay reads "photo" from its magic bytes. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);

describe("chat platforms through wrangler dev, driven by the shim", () => {
  let fakes: FakePlatforms;
  let relay: RunningRelay;
  let dir: string;
  let env: Record<string, string>;
  const chat = "4242";
  const otherChat = "4343";
  const person = "15551230001";
  const latePerson = "15551230002";

  beforeAll(async () => {
    prepareShim();
    fakes = await startFakePlatforms({
      telegram: { readBytesPerSecond: SLOW_LINK_BYTES_PER_SECOND },
      whatsapp: { closedWindows: [latePerson] },
    });
    relay = await startRelay({
      vars: {
        TELEGRAM_BOT_TOKEN: fakes.telegram.token,
        TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
        TELEGRAM_API_ROOT: fakes.telegram.url,
        WHATSAPP_ACCESS_TOKEN: fakes.whatsapp.token,
        WHATSAPP_PHONE_NUMBER_ID: fakes.whatsapp.phoneNumberId,
        WHATSAPP_APP_SECRET: "e2e-whatsapp-app-secret",
        WHATSAPP_API_BASE: fakes.whatsapp.url,
        WHATSAPP_MEDIA_HOSTS: new URL(fakes.whatsapp.url).host,
      },
    });
    const session = await relay.mintSession({
      destinations: [
        `telegram:${chat}`,
        `telegram:${otherChat}`,
        `whatsapp:${person}`,
        `whatsapp:${latePerson}`,
      ],
    });
    env = relayEnv(relay.url, session.token);
    dir = await mkdtemp(join(tmpdir(), "airlock-chat-e2e-"));
  });

  afterAll(async () => {
    await relay?.stop();
    await fakes?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("delivers `airlock send --to` natively: the chat gets the exact bytes, name and caption", async () => {
    const path = join(dir, "chart.png");
    await writeFile(path, PNG);
    const sent = await runShim(
      ["send", path, "--to", `telegram:${chat}`, "--caption", "Today's chart", "--json"],
      { env },
    );
    expect(sent.code).toBe(0);
    const line = JSON.parse(sent.stdout) as {
      deliveries: { mode: string; method: string; status: string }[];
    };
    expect(line.deliveries).toMatchObject([
      { mode: "native", method: "sendPhoto", status: "delivered" },
    ]);
    const [photo] = fakes.telegram.requests("sendPhoto").filter((r) => r.fields.chat_id === chat);
    expect(photo?.fields.caption).toBe("Today's chart");
    expect(photo?.files[0]).toMatchObject({
      filename: "chart.png",
      size: PNG.byteLength,
      sha256: sha256(PNG),
    });
  });

  it("refuses a destination the session is not bound to, with one line, after keeping the file", async () => {
    const path = join(dir, "other.txt");
    await writeFile(path, "hello\n");
    const sent = await runShim(["send", path, "--to", "telegram:999"], { env });
    expect(sent.code).toBe(1);
    expect(sent.stdout).toMatch(/\/d\//);
    expect(sent.stderrLines.filter((l) => l.startsWith("airlock: "))).toHaveLength(1);
    expect(sent.stderr).toContain("destination_not_allowed");
  });

  /**
   * A session of the test's own, newest bound to `chat`, so the chat's attachments go to it: a
   * fetch that lands late cannot reach another test's inbox.
   */
  async function chatSession(): Promise<Record<string, string>> {
    const session = await relay.mintSession({ destinations: [`telegram:${chat}`] });
    return relayEnv(relay.url, session.token);
  }

  it("takes a person's attachment from the webhook to a file on disk with `airlock pull`", async () => {
    const own = await chatSession();
    const bytes = randomBytes(300_000);
    const ref = fakes.telegram.addFile({
      name: "dataset.csv",
      contentType: "text/csv",
      data: bytes,
    });
    const update = {
      update_id: 9001,
      message: {
        message_id: 5,
        date: 0,
        chat: { id: Number(chat), type: "private" },
        document: ref,
      },
    };
    const hook = await fetch(`${relay.url}/webhooks/telegram`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-telegram-bot-api-secret-token": TELEGRAM_SECRET,
      },
      body: JSON.stringify(update),
    });
    expect(hook.status).toBe(200);

    const uploads = join(dir, "uploads");
    let pulled = await runShim(["pull", "--dir", uploads], { env: own });
    const deadline = Date.now() + 60_000;
    while (pulled.stdout === "" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250)); // the relay fetches in the background
      pulled = await runShim(["pull", "--dir", uploads], { env: own });
    }
    expect(pulled.code).toBe(0);
    const path = join(uploads, "dataset.csv");
    expect(pulled.stdout.trim()).toBe(`[User uploaded: dataset.csv (293 KiB) at ${path}]`);
    expect(sha256(await readFile(path))).toBe(sha256(bytes));
    expect(await readdir(uploads)).toEqual(["dataset.csv"]);
    const again = await runShim(["pull", "--dir", uploads], { env: own });
    expect(again.stdout).toBe("");
  }, 120_000);

  it("refuses a forged webhook with 401 and nothing reaches the inbox", async () => {
    const own = await chatSession();
    const ref = fakes.telegram.addFile({ name: "forged.bin", data: randomBytes(10) });
    const hook = await fetch(`${relay.url}/webhooks/telegram`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": "guess" },
      body: JSON.stringify({
        update_id: 9002,
        message: {
          message_id: 6,
          date: 0,
          chat: { id: Number(chat), type: "private" },
          document: ref,
        },
      }),
    });
    expect(hook.status).toBe(401);
    const pulled = await runShim(["pull", "--dir", join(dir, "forged"), "--json"], { env: own });
    expect(pulled.stdout).toBe("");
  });

  it("uploads once and delivers to several chats in parallel, each reported with its message id", async () => {
    const bytes = randomBytes(200_000);
    const path = join(dir, "Makefile");
    await writeFile(path, bytes);
    fakes.reset();
    const sent = await runShim(
      ["send", path, "--to", `telegram:${chat}`, "--to", `whatsapp:${person}`, "--json"],
      { env },
    );
    expect(sent.stderr).toBe(
      `delivered Makefile to telegram:${chat} (native, sendDocument)\n` +
        `delivered Makefile to whatsapp:${person} (native, messages.document)\n`,
    );
    expect(sent.code).toBe(0);
    const line = JSON.parse(sent.stdout) as {
      deliveries: { to: string; mode: string; messageId: string; uploadedBytes: number }[];
    };
    expect(line.deliveries).toMatchObject([
      { to: `telegram:${chat}`, mode: "native", status: "delivered", uploadedBytes: 200_000 },
      { to: `whatsapp:${person}`, mode: "native", status: "delivered", uploadedBytes: 200_000 },
    ]);
    expect(line.deliveries[0]?.messageId).toMatch(/^\d+$/);
    expect(line.deliveries[1]?.messageId).toMatch(/^wamid\./);
    const [telegramUpload] = fakes.telegram.requests("sendDocument");
    expect(telegramUpload?.files[0]).toMatchObject({ filename: "Makefile", sha256: sha256(bytes) });
    const [whatsappUpload] = fakes.whatsapp.requests("media");
    expect(whatsappUpload?.files[0]).toMatchObject({ filename: "Makefile", sha256: sha256(bytes) });
    const [message] = fakes.whatsapp.requests("messages");
    expect(message?.json).toMatchObject({
      to: person,
      type: "document",
      document: { filename: "Makefile" },
    });
  });

  it("sends the same content to a second Telegram chat by file_id, without its bytes", async () => {
    const bytes = randomBytes(5_000_000);
    const path = join(dir, "five.bin");
    await writeFile(path, bytes);
    fakes.reset();
    const first = await runShim(["send", path, "--to", `telegram:${chat}`, "--json"], { env });
    const second = await runShim(["send", path, "--to", `telegram:${otherChat}`, "--json"], {
      env,
    });
    expect([first.code, second.code]).toEqual([0, 0]);
    const deliveryOf = (out: string) =>
      (JSON.parse(out) as { deliveries: { uploadedBytes: number }[] }).deliveries[0];
    expect(deliveryOf(first.stdout)?.uploadedBytes).toBe(5_000_000);
    expect(deliveryOf(second.stdout)?.uploadedBytes).toBe(0);
    const sends = fakes.telegram.requests("sendDocument");
    expect(sends.map((r) => r.fields.chat_id)).toEqual([chat, otherChat]);
    expect(sends[0]?.files.map((f) => f.sha256)).toEqual([sha256(bytes)]);
    expect(sends[1]?.files).toEqual([]);
    expect(sends[1]?.fields.document).toMatch(/^BQAC/);
    expect(sends[1]?.bodySize).toBeLessThan(10_000);
  });

  it("fails outside WhatsApp's 24-hour window with one line and exit 1, recorded as failed", async () => {
    const path = join(dir, "late.txt");
    await writeFile(path, "too late\n");
    const sent = await runShim(["send", path, "--to", `whatsapp:${latePerson}`, "--json"], {
      env,
    });
    expect(sent.code).toBe(1);
    const lines = sent.stderrLines.filter((l) => l !== "");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^airlock: delivery of late\\.txt to whatsapp:${latePerson} failed: delivery_failed: ` +
          "whatsapp refused: outside WhatsApp's 24-hour window since the person's last message",
      ),
    );
    const line = JSON.parse(sent.stdout) as { fileId: string; deliveries: { status: string }[] };
    expect(line.deliveries).toMatchObject([{ status: "failed" }]);
    const recorded = (await (
      await fetch(`${relay.url}/v1/files/${line.fileId}/deliveries`, {
        headers: { authorization: `Bearer ${env.AIRLOCK_TOKEN}` },
      })
    ).json()) as { deliveries: { status: string; error: string }[] };
    expect(recorded.deliveries).toMatchObject([{ status: "failed" }]);
    expect(recorded.deliveries[0]?.error).toContain("24-hour window");
  });

  it("completes a 50 MB Telegram upload over a slow link (the fake reads 8 MB/s)", async () => {
    const bytes = randomBytes(50_000_000);
    const path = join(dir, "video.bin");
    await writeFile(path, bytes);
    fakes.reset();
    const started = Date.now();
    const sent = await runShim(["send", path, "--to", `telegram:${chat}`, "--json"], {
      env,
      timeoutMs: 280_000,
    });
    const seconds = (Date.now() - started) / 1000;
    expect(sent.stderr).toBe(`delivered video.bin to telegram:${chat} (native, sendDocument)\n`);
    expect(sent.code).toBe(0);
    // At 8 MB/s the upload alone takes 6.25 s: a timeout shorter than that would have cut it.
    expect(seconds).toBeGreaterThan(50_000_000 / SLOW_LINK_BYTES_PER_SECOND);
    const [upload] = fakes.telegram.requests("sendDocument");
    expect(upload?.files[0]).toMatchObject({ size: 50_000_000, sha256: sha256(bytes) });
    await rm(path);
  }, 300_000);
});
