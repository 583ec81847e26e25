import { telegramFaults } from "../../fixtures/platforms/telegram-fake";
import { uniqueChatId } from "../../support/platform-fakes";
import { epochMs, fakes, scriptFault, type HandleHarness } from "./harness";

const SECRET = "telegram-webhook-secret";
const SENDS = ["sendPhoto", "sendVideo", "sendAudio", "sendDocument"];

interface TelegramRef {
  file_id: string;
  file_unique_id: string;
  file_size: number;
  file_path: string;
}

let updateId = Math.floor(Math.random() * 1e9);

const chatOf = (fields: Record<string, string>, json: unknown) =>
  fields.chat_id ?? String((json as { chat_id?: unknown } | undefined)?.chat_id);

/** Telegram through grammY against the fake Bot API; webhooks carry the secret token header. */
export const telegram: HandleHarness<TelegramRef> = {
  name: "telegram",
  env: {},
  documentLimit: "TELEGRAM_MAX_UPLOAD_BYTES",
  newChat: uniqueChatId,
  methods: { photo: "sendPhoto", document: "sendDocument", link: "sendMessage" },
  messageId: /^\d+$/,
  async filesSentTo(chat, sha256) {
    const sends = (await fakes.requests("telegram")).filter(
      (r) => SENDS.includes(r.api) && r.fields.chat_id === chat && !r.fault,
    );
    return sends.flatMap((r) =>
      r.files
        .filter((f) => f.sha256 === sha256)
        .map((f) => ({
          name: f.filename,
          size: f.size,
          sha256: f.sha256,
          caption: r.fields.caption,
        })),
    );
  },
  async textsTo(chat) {
    return (await fakes.requests("telegram", "sendMessage"))
      .filter((r) => chatOf(r.fields, r.json) === chat)
      .map((r) => String((r.json as { text?: unknown } | undefined)?.text));
  },
  async sendAttempts(chat) {
    return (await fakes.requests("telegram", "sendDocument"))
      .filter((r) => r.fields.chat_id === chat)
      .map((r) => ({ at: epochMs(r), fault: r.fault ?? false }));
  },
  async faultSend(chat, _file, fault, retryAfter = 1) {
    const answers = {
      rateLimited: telegramFaults.rateLimited(retryAfter),
      refused: telegramFaults.chatNotFound(),
      tooLarge: {
        status: 413,
        body: { ok: false, error_code: 413, description: "Request Entity Too Large" },
      },
    };
    await scriptFault("telegram", "sendDocument", { fields: { chat_id: chat } }, answers[fault]);
  },
  reasons: { refused: "chat not found", tooLarge: "Request Entity Too Large" },
  addAttachment: (name, bytes) => fakes.addFile<TelegramRef>("telegram", name, bytes),
  async webhook(chat, ref, name) {
    const body = JSON.stringify({
      update_id: ++updateId,
      message: {
        message_id: 1,
        date: 0,
        chat: { id: Number(chat), type: "private" },
        document: { ...ref, file_name: name },
      },
    });
    return {
      body,
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET },
    };
  },
  // The secret token proves the sender, not the body: there is no tampered form to refuse.
  async forgeries({ body }) {
    const json = { "content-type": "application/json" };
    return [
      { body, headers: { ...json, "x-telegram-bot-api-secret-token": "guess" } },
      { body, headers: json },
    ];
  },
  async downloadsOf(ref) {
    return (await fakes.requests("telegram", "file")).filter((r) => r.path.endsWith(ref.file_path));
  },
  downloadAuth: "path",
  async uploadsOf(sha256) {
    const sends = await fakes.requests("telegram", "sendDocument");
    return sends.filter((r) => !r.fault && r.files.some((f) => f.sha256 === sha256)).length;
  },
  async handlesSentTo(chat) {
    return (await fakes.requests("telegram", "sendDocument"))
      .filter((r) => r.fields.chat_id === chat && r.files.length === 0)
      .map((r) => r.fields.document ?? "");
  },
  staleHandle: "BQACforgotten",
};
