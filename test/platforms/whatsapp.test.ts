import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import type { RecordedRequestJson } from "../fixtures/platforms/recorder";
import type { DeliveryRecord } from "../../src/services/delivery/deliver";
import { randomBytes, sha256Hex } from "../support/bytes";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { errorOf, RelayClient } from "../support/relay-client";
import { upload } from "../support/send";

const fakes = new PlatformFakes();
const urls = inject("platforms");

function whatsappEnv(overrides: Record<string, string> = {}) {
  return fakes.env(env, {
    WHATSAPP_ACCESS_TOKEN: urls.tokens.whatsapp,
    WHATSAPP_PHONE_NUMBER_ID: urls.whatsappPhoneNumberId,
    WHATSAPP_APP_SECRET: "whatsapp-app-secret",
    WHATSAPP_VERIFY_TOKEN: "whatsapp-verify-token",
    WHATSAPP_API_BASE: urls.whatsapp,
    WHATSAPP_MEDIA_HOSTS: new URL(urls.whatsapp).host,
    ...overrides,
  });
}

function whatsappRequests(api: string): Promise<RecordedRequestJson[]> {
  return fakes.requests("whatsapp", api);
}

async function setup(overrides: Record<string, string> = {}) {
  const client = new RelayClient(whatsappEnv(overrides));
  const chats = { whatsapp: uniqueChatId(), other: uniqueChatId(), telegram: uniqueChatId() };
  const telegram2 = uniqueChatId();
  const { token } = await client.mintSession({
    destinations: [
      `whatsapp:${chats.whatsapp}`,
      `whatsapp:${chats.other}`,
      `telegram:${chats.telegram}`,
      `telegram:${telegram2}`,
    ],
  });
  const deliver = async (fileId: string, body: object) =>
    client.call("POST", `/v1/files/${fileId}/deliveries`, { token, json: body });
  return { client, token, chats: { ...chats, telegram2 }, deliver };
}

/** The messages the fake got for one person, in order. */
async function messagesTo(waId: string): Promise<Record<string, unknown>[]> {
  return (await whatsappRequests("messages"))
    .map((r) => r.json as Record<string, unknown>)
    .filter((m) => m.to === waId);
}

describe("delivery to WhatsApp", () => {
  it("fails outside the 24-hour window (131047) with a clear reason, recorded failed", async () => {
    const { client, token, chats, deliver } = await setup();
    const file = await upload(client, token, randomBytes(3000), "late.bin");
    await fakes.fault("whatsapp", {
      method: "messages",
      // Only this person's message: the fake is shared with test files running at the same time.
      match: { fields: { to: chats.whatsapp } },
      response: {
        status: 400,
        body: { error: { message: "(#131047) Re-engagement message", code: 131047 } },
      },
    });
    const error = await errorOf(await deliver(file.fileId, { to: `whatsapp:${chats.whatsapp}` }));
    expect(error).toMatchObject({ status: 502, code: "delivery_failed" });
    expect(error.message).toContain(
      "outside WhatsApp's 24-hour window since the person's last message",
    );
    const list = (await (
      await client.call("GET", `/v1/files/${file.fileId}/deliveries`, { token })
    ).json()) as { deliveries: DeliveryRecord[] };
    expect(list.deliveries).toMatchObject([{ status: "failed", messageId: null }]);
    expect(list.deliveries[0]?.error).toContain("24-hour window");
  });
});

describe("re-send without re-upload", () => {
  it("sends the same file to a second Telegram chat by file_id: the bytes go up once", async () => {
    const { client, token, chats, deliver } = await setup();
    const bytes = randomBytes(50_000);
    const file = await upload(client, token, bytes, "five.bin");
    const first = (await (
      await deliver(file.fileId, { to: `telegram:${chats.telegram}` })
    ).json()) as DeliveryRecord;
    const second = (await (
      await deliver(file.fileId, { to: `telegram:${chats.telegram2}` })
    ).json()) as DeliveryRecord;
    expect(first).toMatchObject({ status: "delivered", uploadedBytes: 50_000 });
    expect(second).toMatchObject({ status: "delivered", uploadedBytes: 0 });
    const sends = (await fakes.requests("telegram", "sendDocument")).filter((r) =>
      [chats.telegram, chats.telegram2].includes(r.fields.chat_id ?? ""),
    );
    expect(sends).toHaveLength(2);
    expect(sends[0]?.files).toHaveLength(1);
    expect(sends[0]?.files[0]?.sha256).toBe(await sha256Hex(bytes));
    expect(sends[1]?.files).toHaveLength(0);
    expect(sends[1]?.fields.document).toMatch(/^BQAC/);
  });

  it("sends a WhatsApp media id again, and uploads once more when WhatsApp no longer has it", async () => {
    const { client, token, chats, deliver } = await setup();
    const bytes = randomBytes(20_000);
    const file = await upload(client, token, bytes, "report.bin");
    const uploadsOf = async () =>
      (await whatsappRequests("media")).filter((r) =>
        r.files.some((f) => f.sha256 === file.sha256),
      );
    const first = (await (
      await deliver(file.fileId, { to: `whatsapp:${chats.whatsapp}` })
    ).json()) as DeliveryRecord;
    const second = (await (
      await deliver(file.fileId, { to: `whatsapp:${chats.other}` })
    ).json()) as DeliveryRecord;
    expect(first.uploadedBytes).toBe(20_000);
    expect(second).toMatchObject({ status: "delivered", uploadedBytes: 0 });
    expect(await uploadsOf()).toHaveLength(1);
    const mediaId = ((await messagesTo(chats.other))[0]?.document as { id: string }).id;
    expect(((await messagesTo(chats.whatsapp))[0]?.document as { id: string }).id).toBe(mediaId);

    // WhatsApp forgot the media (30 days on): one fresh upload, and the new id replaces it.
    await env.DB.prepare("UPDATE platform_handles SET handle = 'forgotten' WHERE handle = ?")
      .bind(mediaId)
      .run();
    const third = (await (
      await deliver(file.fileId, { to: `whatsapp:${chats.whatsapp}`, caption: "again" })
    ).json()) as DeliveryRecord;
    expect(third).toMatchObject({ status: "delivered", uploadedBytes: 20_000 });
    expect(await uploadsOf()).toHaveLength(2);
    const stored = await env.DB.prepare(
      "SELECT handle FROM platform_handles WHERE platform = 'whatsapp' AND sha256 = ?",
    )
      .bind(file.sha256)
      .all<{ handle: string }>();
    expect(stored.results).toHaveLength(1);
    expect(stored.results[0]?.handle).not.toBe("forgotten");
    expect(stored.results[0]?.handle).not.toBe(mediaId);
  });

  it("uploads a Telegram file again when its file_id is refused, and keeps the new one", async () => {
    const { client, token, chats, deliver } = await setup();
    const bytes = randomBytes(30_000);
    const file = await upload(client, token, bytes, "again.bin");
    await deliver(file.fileId, { to: `telegram:${chats.telegram}` });
    await env.DB.prepare(
      "UPDATE platform_handles SET handle = 'BQACforgotten' WHERE platform = 'telegram' AND sha256 = ?",
    )
      .bind(file.sha256)
      .run();
    const record = (await (
      await deliver(file.fileId, { to: `telegram:${chats.telegram2}` })
    ).json()) as DeliveryRecord;
    expect(record).toMatchObject({ status: "delivered", uploadedBytes: 30_000 });
    const sends = (await fakes.requests("telegram", "sendDocument")).filter(
      (r) => r.fields.chat_id === chats.telegram2,
    );
    expect(sends.map((r) => r.files[0]?.sha256 ?? r.fields.document)).toEqual([
      "BQACforgotten",
      file.sha256,
    ]);
    const kept = await env.DB.prepare(
      "SELECT handle FROM platform_handles WHERE platform = 'telegram' AND sha256 = ?",
    )
      .bind(file.sha256)
      .first<{ handle: string }>();
    expect(kept?.handle).toMatch(/^BQAC/);
    expect(kept?.handle).not.toBe("BQACforgotten");
  });

  it("never reuses a handle across owner scopes: another session's same bytes go up again", async () => {
    const a = await setup();
    const b = await setup();
    const bytes = randomBytes(10_000);
    const fileA = await upload(a.client, a.token, bytes, "same.bin");
    const fileB = await upload(b.client, b.token, bytes, "same.bin");
    const one = (await (
      await a.deliver(fileA.fileId, { to: `telegram:${a.chats.telegram}` })
    ).json()) as DeliveryRecord;
    const two = (await (
      await b.deliver(fileB.fileId, { to: `telegram:${b.chats.telegram}` })
    ).json()) as DeliveryRecord;
    expect(one.uploadedBytes).toBe(10_000);
    expect(two.uploadedBytes).toBe(10_000);
  });
});
