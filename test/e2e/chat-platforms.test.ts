import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakePlatforms, type FakePlatforms } from "../fixtures/platforms/start-fake-platforms";
import { prepareShim, runShim, relayEnv } from "../shim/run-shim";
import { startRelay, type RunningRelay } from "../support/relay";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const TELEGRAM_SECRET = "e2e-telegram-webhook-secret";

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

  beforeAll(async () => {
    prepareShim();
    fakes = await startFakePlatforms();
    relay = await startRelay({
      vars: {
        TELEGRAM_BOT_TOKEN: fakes.telegram.token,
        TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
        TELEGRAM_API_ROOT: fakes.telegram.url,
      },
    });
    const session = await relay.mintSession({ destinations: [`telegram:${chat}`] });
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

  it("takes a person's attachment from the webhook to a file on disk with `airlock pull`", async () => {
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
    let pulled = await runShim(["pull", "--dir", uploads], { env });
    for (let i = 0; i < 40 && pulled.stdout === ""; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250)); // the relay fetches in the background
      pulled = await runShim(["pull", "--dir", uploads], { env });
    }
    expect(pulled.code).toBe(0);
    const path = join(uploads, "dataset.csv");
    expect(pulled.stdout.trim()).toBe(`[User uploaded: dataset.csv (300 KB) at ${path}]`);
    expect(sha256(await readFile(path))).toBe(sha256(bytes));
    expect(await readdir(uploads)).toEqual(["dataset.csv"]);
    const again = await runShim(["pull", "--dir", uploads], { env });
    expect(again.stdout).toBe("");
  });

  it("refuses a forged webhook with 401 and nothing reaches the inbox", async () => {
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
    const pulled = await runShim(["pull", "--dir", join(dir, "forged"), "--json"], { env });
    expect(pulled.stdout).toBe("");
  });
});
