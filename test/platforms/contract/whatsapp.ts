import { inject } from "vitest";
import { whatsappWebhook, type WhatsAppMediaRef } from "../../fixtures/platforms/whatsapp-fake";
import { uniqueChatId } from "../../support/platform-fakes";
import { hubSignature } from "../../support/webhook-signing";
import { epochMs, fakes, scriptFault, type HandleHarness } from "./harness";

const urls = inject("platforms");
const SECRET = "whatsapp-app-secret-for-the-contract";
const TYPES = ["image", "video", "audio", "document"] as const;

const sign = async (body: string, secret = SECRET) => ({
  "content-type": "application/json",
  "x-hub-signature-256": await hubSignature(secret, body),
});

let messageSeq = Math.floor(Math.random() * 1e9);

/** WhatsApp's Cloud API (plain fetch) against the fake Graph API; webhooks signed with the app secret. */
export const whatsapp: HandleHarness<WhatsAppMediaRef> = {
  name: "whatsapp",
  env: {
    WHATSAPP_ACCESS_TOKEN: urls.tokens.whatsapp,
    WHATSAPP_PHONE_NUMBER_ID: urls.whatsappPhoneNumberId,
    WHATSAPP_APP_SECRET: SECRET,
    WHATSAPP_API_BASE: urls.whatsapp,
    WHATSAPP_MEDIA_HOSTS: new URL(urls.whatsapp).host,
  },
  documentLimit: "WHATSAPP_MAX_DOCUMENT_BYTES",
  newChat: uniqueChatId,
  methods: { photo: "messages.image", document: "messages.document", link: "messages.text" },
  messageId: /^wamid\./,
  async filesSentTo(chat, sha256) {
    const messages = (await fakes.requests("whatsapp", "messages")).filter(
      (r) => (r.json as { to?: string } | undefined)?.to === chat && !r.fault,
    );
    const uploads = await fakes.requests("whatsapp", "media");
    const sent = [];
    for (const message of messages) {
      const json = message.json as Record<string, { id?: string; caption?: string } | undefined>;
      const type = TYPES.find((t) => json[t]);
      if (!type) continue;
      const media = json[type]!;
      // The message names the media by the id the upload answered, which the fake does not
      // record: the upload is the last one of these bytes before the message.
      const upload = uploads
        .filter((u) => u.seq < message.seq && !u.fault && u.files[0]?.sha256 === sha256)
        .at(-1)?.files[0];
      if (upload)
        sent.push({ name: upload.filename, size: upload.size, sha256, caption: media.caption });
    }
    return sent;
  },
  async textsTo(chat) {
    return (await fakes.requests("whatsapp", "messages"))
      .map((r) => (r.json ?? {}) as { to?: string; text?: { body?: string } })
      .filter((m) => m.to === chat && m.text)
      .map((m) => String(m.text?.body));
  },
  async sendAttempts(chat) {
    return (await fakes.requests("whatsapp", "messages"))
      .filter((r) => (r.json as { to?: string } | undefined)?.to === chat)
      .map((r) => ({ at: epochMs(r), fault: r.fault ?? false }));
  },
  async faultSend(chat, file, fault, retryAfter = 1) {
    if (fault === "tooLarge") {
      // The media upload is refused; it names no person, so the fault is keyed by its content type.
      await scriptFault(
        "whatsapp",
        "media",
        { fields: { type: file.contentType } },
        {
          status: 400,
          body: {
            error: {
              message: "(#131053) Media upload error",
              code: 131053,
              error_data: { details: "file is too large" },
            },
          },
        },
      );
      return;
    }
    const answer =
      fault === "rateLimited"
        ? {
            status: 429,
            body: { error: { message: "(#130429) Rate limit hit", code: 130429 } },
            headers: { "retry-after": String(retryAfter) },
          }
        : {
            status: 400,
            body: { error: { message: "(#131026) Message undeliverable", code: 131026 } },
          };
    await scriptFault("whatsapp", "messages", { fields: { to: chat } }, answer);
  },
  reasons: { refused: "Message undeliverable (131026)", tooLarge: "file is too large" },
  addAttachment: (name, bytes) => fakes.addFile<WhatsAppMediaRef>("whatsapp", name, bytes),
  async webhook(chat, ref, name) {
    const body = JSON.stringify(
      whatsappWebhook({
        phoneNumberId: urls.whatsappPhoneNumberId,
        from: chat,
        messageId: `wamid.HBgL${++messageSeq}`,
        type: "document",
        ref,
        filename: name,
      }),
    );
    return { body, headers: await sign(body) };
  },
  async forgeries({ body, headers }) {
    return [
      { body, headers: await sign(body, "another-secret") },
      { body, headers: { "content-type": "application/json" } },
      { body: body.replace('"document"', '"documant"'), headers },
    ];
  },
  async downloadsOf(ref) {
    return (await fakes.requests("whatsapp", "download")).filter((r) => r.query.mid === ref.id);
  },
  downloadAuth: "Bearer",
  async uploadsOf(sha256) {
    const uploads = await fakes.requests("whatsapp", "media");
    return uploads.filter((r) => !r.fault && r.files.some((f) => f.sha256 === sha256)).length;
  },
  async handlesSentTo(chat) {
    return (await fakes.requests("whatsapp", "messages"))
      .map((r) => (r.json ?? {}) as { to?: string; document?: { id?: string } })
      .filter((m) => m.to === chat && m.document)
      .map((m) => String(m.document?.id));
  },
  staleHandle: "forgotten",
};
