import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import {
  TELEGRAM_TOKEN,
  startTelegramFake,
  type TelegramFake,
} from "../fixtures/platforms/telegram-fake";
import { apiCall, type ApiAnswer } from "../support/api-call";
import { randomBytes } from "../support/bytes";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import { prepareShim, relayEnv, runShim } from "../shim/run-shim";
import { shimScratchDir } from "../shim/scratch-dir";
import { LAPSED_DELIVERY_REASON } from "../../src/services/delivery/lease";

// Issue 24 §3: `kill -9` of the relay while a Telegram delivery is in flight. The delivery's
// lease lapses, a retry with the same Idempotency-Key takes it over and delivers (and, once a
// message id is recorded, never posts again), and the sweep settles one nobody retried as
// failed with a reason the sandbox reads. The sandbox holds only its token.

const LEASE_SECONDS = 2;
/** A slow upstream link: a 300 KB upload takes the fake about ten seconds to read. */
const SLOW_BYTES_PER_SECOND = 32_000;
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const scratch = shimScratchDir("airlock-delivery-crash-");

describe.each(["r2", "s3"] as const)("a delivery cut by a crash on %s", (storage) => {
  let relay: RunningRelay;
  let telegram: TelegramFake;
  let s3: StrictS3 | undefined;

  beforeAll(async () => {
    prepareShim();
    telegram = await startTelegramFake({ readBytesPerSecond: SLOW_BYTES_PER_SECOND });
    if (storage === "s3") s3 = await startStrictS3();
    relay = await startRelay({
      storage,
      vars: {
        TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
        TELEGRAM_API_ROOT: telegram.url,
        DELIVERY_LEASE_SECONDS: String(LEASE_SECONDS),
        ...(s3 ? s3Vars(s3) : {}),
      },
    });
  });
  afterAll(async () => {
    await relay?.stop();
    await telegram?.stop();
    await s3?.stop();
  });

  /** A session bound to a chat of its own, and a file the sandbox sent with the shim. */
  async function sandboxWithFile(chatId: string, size: number) {
    const { token } = await relay.mintSession({ destinations: [`telegram:${chatId}`] });
    const bytes = randomBytes(size);
    const path = join(scratch(), `report-${chatId}.bin`);
    await writeFile(path, bytes);
    const sent = await runShim(["send", path, "--json"], { env: relayEnv(relay.url, token) });
    expect(sent.code, sent.stderr).toBe(0);
    const { fileId } = JSON.parse(sent.stdout) as { fileId: string };
    return { token, bytes, fileId };
  }

  function deliver(token: string, fileId: string, chatId: string, key: string) {
    return fetch(`${relay.url}/v1/files/${fileId}/deliveries`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "idempotency-key": key,
      },
      body: JSON.stringify({ to: `telegram:${chatId}` }),
    });
  }

  /**
   * The posts the fake has received (a post's fields are known only once its body is read; the
   * fake is this file's alone and its tests run one at a time, so counting all of them is exact).
   */
  const posts = () => telegram.requests("sendDocument");

  /** Starts a delivery and kills the relay while the fake is still reading its upload. */
  async function crashMidDelivery(token: string, fileId: string, chatId: string, key: string) {
    const before = posts().length;
    const cut = deliver(token, fileId, chatId, key).catch((error: unknown) => error);
    for (let attempt = 0; attempt < 600 && posts().length === before; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(posts().length).toBe(before + 1);
    await relay.crashAndRestart();
    expect(await cut).toBeInstanceOf(Error); // The sandbox saw the connection go.
  }

  it("lets a retry with the same Idempotency-Key take the delivery over, and posts once after", async () => {
    const chatId = String(700_000_000 + Math.floor(Math.random() * 99_999_999));
    const { token, bytes, fileId } = await sandboxWithFile(chatId, 300_000);
    const key = `crash-${chatId}`;
    await crashMidDelivery(token, fileId, chatId, key);

    // Until the lease lapses a retry is told the delivery is in progress; then it takes over.
    let answer: Response | undefined;
    for (let attempt = 0; attempt < 120; attempt++) {
      answer = await deliver(token, fileId, chatId, key);
      if (answer.status !== 409) break;
      const { error } = (await answer.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe("delivery_in_progress");
      expect(error.message).toMatch(/if it was cut off, a retry after \S+ takes it over$/);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(answer!.status).toBe(201);
    const delivered = (await answer!.json()) as { status: string; messageId: string };
    expect(delivered).toMatchObject({ status: "delivered", mode: "native" });
    const answered = posts().filter((r) => r.status === 200 && r.fields.chat_id === chatId);
    expect(answered).toHaveLength(1);
    expect(answered[0]!.files.map((f) => f.sha256)).toEqual([sha256(bytes)]);

    // With a message id recorded, the same key answers the same delivery and posts nothing.
    const before = posts().length;
    const again = await deliver(token, fileId, chatId, key);
    expect(again.status).toBeLessThan(300);
    expect(await again.json()).toMatchObject({
      status: "delivered",
      messageId: delivered.messageId,
    });
    expect(posts().length).toBe(before);
  });

  it("settles a delivery nobody retried as failed, with the reason the sandbox reads", async () => {
    const chatId = String(800_000_000 + Math.floor(Math.random() * 99_999_999));
    const { token, fileId } = await sandboxWithFile(chatId, 300_000);
    await crashMidDelivery(token, fileId, chatId, `sweep-${chatId}`);

    let listed: ApiAnswer | undefined;
    for (let attempt = 0; attempt < 120; attempt++) {
      await relay.runScheduled();
      listed = await apiCall(relay.url, token, "GET", `/v1/files/${fileId}/deliveries`);
      const [only] = listed.body.deliveries as { status: string }[];
      if (only?.status !== "sending") break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(listed!.body.deliveries).toEqual([
      expect.objectContaining({
        to: `telegram:${chatId}`,
        status: "failed",
        messageId: null,
        error: LAPSED_DELIVERY_REASON,
      }),
    ]);
  });
});
