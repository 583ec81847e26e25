import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { DeliveryRecord } from "../../src/services/delivery/deliver";
import { logText, randomBytes, sha256Hex, TINY_PNG } from "../support/bytes";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { errorOf, RelayClient } from "../support/relay-client";
import { upload } from "../support/send";
import { whatsapp } from "./contract/whatsapp";

const fakes = new PlatformFakes();

async function setup(overrides = {}) {
  const client = new RelayClient(fakes.env(env, overrides));
  const chats = { telegram: uniqueChatId(), discord: uniqueChatId(), slack: `C${uniqueChatId()}` };
  const { token } = await client.mintSession({
    destinations: [
      `telegram:${chats.telegram}`,
      `discord:${chats.discord}`,
      `slack:${chats.slack}`,
    ],
  });
  const deliver = (fileId: string, body: object, key?: string) =>
    client.call("POST", `/v1/files/${fileId}/deliveries`, {
      token,
      json: body,
      headers: key ? { "idempotency-key": key } : {},
    });
  return { client, token, chats, deliver };
}

/**
 * The fake Telegram refuses the next sendDocument to `chat` with a 400 and `reason`. Scoped to the test's
 * own chat: the fake is shared with test files running at the same time, whose sendDocument must not take it.
 */
function refuseNextTelegramDocument(chat: string, reason = "not enough rights") {
  return fakes.fault("telegram", {
    method: "sendDocument",
    match: { fields: { chat_id: chat } },
    times: 1,
    response: {
      status: 400,
      body: { ok: false, error_code: 400, description: `Bad Request: ${reason}` },
    },
  });
}

describe("delivery to Telegram", () => {
  it("sends the original bytes of a gzip-stored text file with sendDocument, whatever its name says", async () => {
    const { client, token, chats, deliver } = await setup();
    const text = logText(3000);
    const file = await upload(client, token, text, "looks-like.jpg", "gzip");
    const record = (await (
      await deliver(file.fileId, { to: `telegram:${chats.telegram}` })
    ).json()) as DeliveryRecord;
    expect(record).toMatchObject({ mode: "native", method: "sendDocument" });
    const [sent] = (await fakes.requests("telegram", "sendDocument")).filter(
      (r) => r.fields.chat_id === chats.telegram,
    );
    expect(sent?.files[0]).toMatchObject({
      filename: "looks-like.jpg",
      size: text.byteLength,
      sha256: await sha256Hex(text),
    });
  });

  it("sends a photo over the photo limit natively as a document", async () => {
    const { client, token, chats, deliver } = await setup({ TELEGRAM_MAX_PHOTO_BYTES: "50" });
    const photo = await upload(client, token, TINY_PNG, "big-photo.png");
    expect(
      await (await deliver(photo.fileId, { to: `telegram:${chats.telegram}` })).json(),
    ).toMatchObject({
      mode: "native",
      method: "sendDocument",
    });
  });

  it("does not post twice for a repeated Idempotency-Key", async () => {
    const { client, token, chats, deliver } = await setup();
    const file = await upload(client, token, randomBytes(200), "once.bin");
    const first = (await (
      await deliver(file.fileId, { to: `telegram:${chats.telegram}` }, "key-1")
    ).json()) as DeliveryRecord;
    const second = (await (
      await deliver(file.fileId, { to: `telegram:${chats.telegram}` }, "key-1")
    ).json()) as DeliveryRecord;
    expect(second).toEqual(first);
    const sent = (await fakes.requests("telegram", "sendDocument")).filter(
      (r) => r.fields.chat_id === chats.telegram,
    );
    expect(sent).toHaveLength(1);
  });

  it("refuses an Idempotency-Key used for another file or chat with 409, posting nothing", async () => {
    const { client, token, chats, deliver } = await setup();
    const file = await upload(client, token, randomBytes(200), "first.bin");
    const other = await upload(client, token, randomBytes(210), "other.bin");
    const to = `telegram:${chats.telegram}`;
    const first = (await (await deliver(file.fileId, { to }, "key-3")).json()) as DeliveryRecord;
    const toChat = async () =>
      (await fakes.requests("telegram", "sendDocument")).filter(
        (r) => r.fields.chat_id === chats.telegram,
      );
    expect(await toChat()).toHaveLength(1);
    const expected = {
      status: 409,
      code: "idempotency_key_reused",
      message:
        `this Idempotency-Key was used for another delivery (${first.deliveryId}: file ` +
        `${file.fileId} to ${to}); deliver with a new key`,
    };
    expect(await errorOf(await deliver(other.fileId, { to }, "key-3"))).toEqual(expected);
    const elsewhere = { to: `discord:${chats.discord}` };
    expect(await errorOf(await deliver(file.fileId, elsewhere, "key-3"))).toEqual(expected);
    expect(await toChat()).toHaveLength(1);
    const discord = await fakes.requests("discord", "channels.messages");
    expect(discord.filter((r) => r.path.includes(chats.discord))).toEqual([]);
  });

  it("refuses a failed delivery's Idempotency-Key for another file, leaving its record", async () => {
    const { client, token, chats, deliver } = await setup();
    const file = await upload(client, token, randomBytes(220), "failed.bin");
    const other = await upload(client, token, randomBytes(230), "other.bin");
    await refuseNextTelegramDocument(chats.telegram);
    const to = `telegram:${chats.telegram}`;
    expect((await deliver(file.fileId, { to }, "key-4")).status).toBe(502);
    const refused = await errorOf(await deliver(other.fileId, { to }, "key-4"));
    expect(refused).toMatchObject({ status: 409, code: "idempotency_key_reused" });
    const list = async (fileId: string) =>
      (
        (await (await client.call("GET", `/v1/files/${fileId}/deliveries`, { token })).json()) as {
          deliveries: DeliveryRecord[];
        }
      ).deliveries;
    expect(await list(file.fileId)).toMatchObject([{ status: "failed", fileId: file.fileId }]);
    expect(await list(other.fileId)).toEqual([]);
  });

  it("tries again under the same Idempotency-Key after a failed attempt", async () => {
    const { client, token, chats, deliver } = await setup();
    const file = await upload(client, token, randomBytes(300), "again.bin");
    await refuseNextTelegramDocument(chats.telegram);
    const to = `telegram:${chats.telegram}`;
    expect((await deliver(file.fileId, { to }, "key-2")).status).toBe(502);
    const second = await deliver(file.fileId, { to }, "key-2");
    expect(await second.json()).toMatchObject({ status: "delivered" });
    const sent = (await fakes.requests("telegram", "sendDocument")).filter(
      (r) => r.fields.chat_id === chats.telegram,
    );
    expect(sent.map((r) => r.fault ?? false)).toEqual([true, false]);
  });
});

describe("delivery to Discord", () => {
  it("streams the attachment with its length known, not chunked", async () => {
    const { client, token, chats, deliver } = await setup();
    const bytes = randomBytes(70_000);
    const file = await upload(client, token, bytes, "report.bin");
    expect((await deliver(file.fileId, { to: `discord:${chats.discord}` })).status).toBe(201);
    const [sent] = (await fakes.requests("discord", "channels.messages")).filter((r) =>
      r.path.includes(chats.discord),
    );
    expect(sent?.files[0]).toMatchObject({ size: 70_000, sha256: await sha256Hex(bytes) });
    expect(sent?.chunked).toBe(false);
  });

  it("shows a name with markdown in it as it is in a link message", async () => {
    const { client, token, chats, deliver } = await setup({ DISCORD_MAX_UPLOAD_BYTES: "1000" });
    const name = "__init__ *v2* ||x|| [a](b) <@1> # q.py";
    const file = await upload(client, token, randomBytes(2000), name);
    expect(
      await (await deliver(file.fileId, { to: `discord:${chats.discord}` })).json(),
    ).toMatchObject({ mode: "link" });
    const [sent] = (await fakes.requests("discord", "channels.messages")).filter((r) =>
      r.path.includes(chats.discord),
    );
    const [named] = (sent?.json as { content: string }).content.split("\n");
    expect(named).toBe(
      "📎 \\_\\_init\\_\\_ \\*v2\\* \\|\\|x\\|\\| \\[a\\]\\(b\\) \\<\\@1\\> \\# q.py (2.0 KiB)",
    );
  });
});

describe("delivery to WhatsApp", () => {
  it("fails outside the 24-hour window (131047) with a clear reason, recorded failed", async () => {
    const client = new RelayClient(fakes.env(env, whatsapp.env));
    const person = uniqueChatId();
    const { token } = await client.mintSession({ destinations: [`whatsapp:${person}`] });
    const file = await upload(client, token, randomBytes(3000), "late.bin");
    await fakes.fault("whatsapp", {
      method: "messages",
      // Only this person's message: the fake is shared with test files running at the same time.
      match: { fields: { to: person } },
      response: {
        status: 400,
        body: { error: { message: "(#131047) Re-engagement message", code: 131047 } },
      },
    });
    const error = await errorOf(
      await client.call("POST", `/v1/files/${file.fileId}/deliveries`, {
        token,
        json: { to: `whatsapp:${person}` },
      }),
    );
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

describe("POST /v1/files/:id/deliveries refusals", () => {
  it("refuses a file whose stored bytes are gone with 404, posting nothing and recording nothing", async () => {
    const { client, token, chats, deliver } = await setup();
    const file = await upload(client, token, randomBytes(300), "gone.bin");
    const row = await env.DB.prepare("SELECT stored_key FROM files WHERE id = ?")
      .bind(file.fileId)
      .first<{ stored_key: string }>();
    await env.BUCKET.delete(row!.stored_key);
    for (const to of [`telegram:${chats.telegram}`, `discord:${chats.discord}`]) {
      expect(await errorOf(await deliver(file.fileId, { to }))).toEqual({
        status: 404,
        code: "file_not_found",
        message: "the file's content is no longer stored",
      });
    }
    const telegram = await fakes.requests("telegram", "sendDocument");
    expect(telegram.filter((r) => r.fields.chat_id === chats.telegram)).toEqual([]);
    const discord = await fakes.requests("discord", "channels.messages");
    expect(discord.filter((r) => r.path.includes(chats.discord))).toEqual([]);
    const list = (await (
      await client.call("GET", `/v1/files/${file.fileId}/deliveries`, { token })
    ).json()) as { deliveries: DeliveryRecord[] };
    expect(list.deliveries).toEqual([]);
  });

  it("returns 403 for a destination not bound to the session", async () => {
    const { client, token, deliver } = await setup();
    const file = await upload(client, token, randomBytes(10), "a.bin");
    expect(await errorOf(await deliver(file.fileId, { to: "telegram:1" }))).toMatchObject({
      status: 403,
      code: "destination_not_allowed",
    });
  });

  it("returns 400 for a platform whose bot was removed after the session was minted", async () => {
    const { token, chats } = await setup();
    const without = new RelayClient(fakes.env(env, { DISCORD_BOT_TOKEN: "" }));
    const file = await upload(without, token, randomBytes(10), "a.bin");
    const answer = await without.call("POST", `/v1/files/${file.fileId}/deliveries`, {
      token,
      json: { to: `discord:${chats.discord}` },
    });
    expect(await errorOf(answer)).toMatchObject({
      status: 400,
      code: "platform_not_configured",
      message: "discord is not configured on this relay",
    });
    expect(await fakes.requests("discord", "channels.messages")).not.toContainEqual(
      expect.objectContaining({ path: expect.stringContaining(chats.discord) }),
    );
  });

  it("returns 400 for a malformed destination", async () => {
    const { client, token, deliver } = await setup();
    const file = await upload(client, token, randomBytes(10), "a.bin");
    expect(await errorOf(await deliver(file.fileId, { to: "email:someone" }))).toMatchObject({
      status: 400,
      code: "invalid_request",
    });
  });
});
