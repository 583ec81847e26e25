import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { bytesToHex } from "../../src/encoding";
import type { InboxRecord } from "../../src/services/inbox/inbox";
import type { RecordedRequestJson } from "../fixtures/platforms/recorder";
import type { WhatsAppMediaRef } from "../fixtures/platforms/whatsapp-fake";
import { randomBytes, sha256Hex } from "../support/bytes";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { RelayClient } from "../support/relay-client";

const fakes = new PlatformFakes();
const urls = inject("platforms");
const whatsappOrigin = new URL(urls.whatsapp).origin;
const APP_SECRET = "whatsapp-app-secret-for-inbound";
const PHONE = urls.whatsappPhoneNumberId;

function clientWith(overrides: Record<string, string> = {}) {
  return new RelayClient(
    fakes.env(env, {
      WHATSAPP_ACCESS_TOKEN: urls.tokens.whatsapp,
      WHATSAPP_PHONE_NUMBER_ID: PHONE,
      WHATSAPP_APP_SECRET: APP_SECRET,
      WHATSAPP_API_BASE: urls.whatsapp,
      WHATSAPP_MEDIA_HOSTS: new URL(urls.whatsapp).host,
      ...overrides,
    }),
  );
}
const client = clientWith();

/** The fake's downloads of one media id (`?mid=`): other files' downloads from the shared fake left out. */
async function downloadsOf(mediaId: string): Promise<RecordedRequestJson[]> {
  return (await fakes.requests("whatsapp", "download")).filter((r) => r.query.mid === mediaId);
}

async function addMedia(name: string, bytes: Uint8Array, contentType: string) {
  const query = `?name=${encodeURIComponent(name)}&contentType=${encodeURIComponent(contentType)}`;
  const response = await fetch(`${whatsappOrigin}/__control/files${query}`, {
    method: "POST",
    body: bytes,
  });
  return (await response.json()) as WhatsAppMediaRef;
}

async function sign(body: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(APP_SECRET),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return `sha256=${bytesToHex(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(body)))}`;
}

function messageWebhook(from: string, message: object, phone = PHONE): string {
  return JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      {
        id: "102290129340398",
        changes: [
          {
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: "15550783881", phone_number_id: phone },
              contacts: [{ profile: { name: "Tester" }, wa_id: from }],
              messages: [{ from, timestamp: "1700000000", ...message }],
            },
          },
        ],
      },
    ],
  });
}

async function post(body: string, on = client, signature?: string) {
  return on.call("POST", "/webhooks/whatsapp", {
    body,
    headers: {
      "content-type": "application/json",
      "x-hub-signature-256": signature ?? (await sign(body)),
    },
  });
}

async function inboxOf(token: string, on = client): Promise<InboxRecord[]> {
  return ((await (await on.call("GET", "/v1/inbox", { token })).json()) as { items: InboxRecord[] })
    .items;
}

let messageSeq = Math.floor(Math.random() * 1e9);
const wamid = () => `wamid.HBgL${++messageSeq}`;

describe("receiving from WhatsApp", () => {
  it("puts a document in the inbox of the newest session bound to the sender, byte-exact", async () => {
    const waId = uniqueChatId();
    await client.mintSession({ destinations: [`whatsapp:${waId}`] });
    const { token } = await client.mintSession({ destinations: [`whatsapp:${waId}`] });
    const bytes = randomBytes(300_000);
    const ref = await addMedia("q3.pdf", bytes, "application/pdf");
    const id = wamid();
    const body = messageWebhook(waId, {
      id,
      type: "document",
      document: {
        id: ref.id,
        mime_type: ref.mime_type,
        sha256: ref.sha256,
        filename: "Q3 report.pdf",
      },
    });
    expect((await post(body)).status).toBe(200);
    const [item] = await inboxOf(token);
    expect(item).toMatchObject({
      name: "Q3 report.pdf",
      size: 300_000,
      source: `whatsapp:${waId}`,
      contentType: "application/pdf",
    });
    expect(item?.sha256).toBe(await sha256Hex(bytes));
    const gets = await downloadsOf(ref.id);
    expect(gets).not.toEqual([]);
    for (const get of gets)
      expect(get.authorization).toMatchObject({ scheme: "Bearer", valid: true });

    // The same message id again (Meta redelivers): stored once.
    expect((await post(body)).status).toBe(200);
    expect(await inboxOf(token)).toHaveLength(1);
  });

  it.each(["image", "audio", "video", "voice", "sticker"] as const)(
    "takes a %s, named from its media id with a clean name",
    async (type) => {
      const waId = uniqueChatId();
      const { token } = await client.mintSession({ destinations: [`whatsapp:${waId}`] });
      const mime = {
        image: "image/jpeg",
        audio: "audio/ogg",
        video: "video/mp4",
        voice: "audio/ogg",
        sticker: "image/webp",
      }[type];
      const bytes = randomBytes(2000);
      const ref = await addMedia("x", bytes, mime);
      const body = messageWebhook(waId, {
        id: wamid(),
        type,
        [type]: { id: ref.id, mime_type: `${mime}; codecs=opus`, sha256: ref.sha256 },
      });
      expect((await post(body)).status).toBe(200);
      const [item] = await inboxOf(token);
      expect(item?.name).toMatch(new RegExp(`^${type}-${ref.id}\\.[a-z0-9]+$`));
      expect(item?.sha256).toBe(await sha256Hex(bytes));
    },
  );

  it("takes each message of a batched webhook into its own sender's inbox", async () => {
    const [one, two] = [uniqueChatId(), uniqueChatId()];
    const a = await client.mintSession({ destinations: [`whatsapp:${one}`] });
    const b = await client.mintSession({ destinations: [`whatsapp:${two}`] });
    const refA = await addMedia("a.txt", randomBytes(100), "text/plain");
    const refB = await addMedia("b.txt", randomBytes(200), "text/plain");
    const envelope = JSON.parse(
      messageWebhook(one, {
        id: wamid(),
        type: "document",
        document: { id: refA.id, filename: "a.txt" },
      }),
    ) as { entry: { changes: { value: { messages: object[] } }[] }[] };
    envelope.entry[0]!.changes[0]!.value.messages.push({
      from: two,
      id: wamid(),
      type: "document",
      document: { id: refB.id, filename: "b.txt" },
    });
    expect((await post(JSON.stringify(envelope))).status).toBe(200);
    expect(await inboxOf(a.token)).toMatchObject([{ name: "a.txt", size: 100 }]);
    expect(await inboxOf(b.token)).toMatchObject([{ name: "b.txt", size: 200 }]);
  });

  it("answers status callbacks and messages without media with 200, storing nothing", async () => {
    const waId = uniqueChatId();
    const { token } = await client.mintSession({ destinations: [`whatsapp:${waId}`] });
    const status = JSON.stringify({
      object: "whatsapp_business_account",
      entry: [
        {
          id: "1",
          changes: [
            {
              field: "messages",
              value: {
                messaging_product: "whatsapp",
                metadata: { phone_number_id: PHONE },
                statuses: [
                  { id: wamid(), status: "delivered", recipient_id: waId, timestamp: "1" },
                ],
              },
            },
          ],
        },
      ],
    });
    expect((await post(status)).status).toBe(200);
    const text = messageWebhook(waId, { id: wamid(), type: "text", text: { body: "hi" } });
    expect((await post(text)).status).toBe(200);
    expect(await inboxOf(token)).toEqual([]);
  });

  it("refuses media over the session's quota with a reply in the chat, storing nothing", async () => {
    const waId = uniqueChatId();
    const { token } = await client.mintSession({
      destinations: [`whatsapp:${waId}`],
      quotaBytes: 1000,
    });
    const ref = await addMedia("big.bin", randomBytes(5000), "application/octet-stream");
    const body = messageWebhook(waId, {
      id: wamid(),
      type: "document",
      document: { id: ref.id, mime_type: "application/octet-stream", filename: "big.bin" },
    });
    expect((await post(body)).status).toBe(200);
    expect(await inboxOf(token)).toEqual([]);
    const replies = (
      (await (await fetch(`${whatsappOrigin}/__control/requests?api=messages`)).json()) as {
        json: { to?: string; text?: { body?: string } };
      }[]
    ).filter((r) => r.json.to === waId);
    expect(replies).toHaveLength(1);
    expect(replies[0]?.json.text?.body).toContain("Could not take big.bin");
    expect(replies[0]?.json.text?.body).toContain("quota");
  });

  it("never fetches from a host off the media allow-list (nor sends the token there)", async () => {
    const strict = clientWith({ WHATSAPP_MEDIA_HOSTS: "lookaside.fbsbx.com" });
    const waId = uniqueChatId();
    const { token } = await strict.mintSession({ destinations: [`whatsapp:${waId}`] });
    const ref = await addMedia("a.bin", randomBytes(100), "application/octet-stream");
    const body = messageWebhook(waId, {
      id: wamid(),
      type: "document",
      document: { id: ref.id, mime_type: "application/octet-stream", filename: "a.bin" },
    });
    expect((await post(body, strict)).status).toBe(200);
    expect(await inboxOf(token, strict)).toEqual([]);
    expect(await downloadsOf(ref.id)).toEqual([]);
  });

  it("ignores messages to another phone number of the same app", async () => {
    const waId = uniqueChatId();
    const { token } = await client.mintSession({ destinations: [`whatsapp:${waId}`] });
    const ref = await addMedia("a.bin", randomBytes(100), "application/octet-stream");
    const body = messageWebhook(
      waId,
      { id: wamid(), type: "document", document: { id: ref.id, filename: "a.bin" } },
      "999999999999",
    );
    expect((await post(body)).status).toBe(200);
    expect(await inboxOf(token)).toEqual([]);
  });
});
