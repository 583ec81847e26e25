import { uniqueChatId } from "../../support/platform-fakes";
import { discordKeys, nowSeconds } from "../../support/webhook-signing";
import { epochMs, fakes, scriptFault, type ChatPlatformHarness } from "./harness";

interface DiscordRef {
  id: string;
  filename: string;
  size: number;
  url: string;
}

const keys = await discordKeys();
const other = await discordKeys();

const inChannel = (chat: string) => `/channels/${chat}/messages`;

async function signed(body: string, key = keys, timestamp = nowSeconds()) {
  return {
    "content-type": "application/json",
    "x-signature-ed25519": await key.sign(timestamp, body),
    "x-signature-timestamp": timestamp,
  };
}

/** Discord's REST API (plain fetch, multipart) against the fake; interactions signed with Ed25519. */
export const discord: ChatPlatformHarness<DiscordRef> = {
  name: "discord",
  env: { DISCORD_PUBLIC_KEY: keys.publicKeyHex },
  documentLimit: "DISCORD_MAX_UPLOAD_BYTES",
  newChat: uniqueChatId,
  methods: { photo: "channels.messages", document: "channels.messages", link: "channels.messages" },
  messageId: /^\d{17,20}$/,
  async filesSentTo(chat, sha256) {
    const posts = (await fakes.requests("discord", "channels.messages")).filter(
      (r) => r.path.endsWith(inChannel(chat)) && !r.fault && r.files.length > 0,
    );
    return posts.flatMap((r) => {
      const payload = JSON.parse(r.fields.payload_json ?? "{}") as { content?: string };
      return r.files
        .filter((f) => f.sha256 === sha256)
        .map((f) => ({
          name: f.filename,
          size: f.size,
          sha256: f.sha256,
          caption: payload.content || undefined,
        }));
    });
  },
  async textsTo(chat) {
    return (await fakes.requests("discord", "channels.messages"))
      .filter((r) => r.path.endsWith(inChannel(chat)) && r.files.length === 0)
      .map((r) => String((r.json as { content?: unknown } | undefined)?.content));
  },
  async sendAttempts(chat) {
    return (await fakes.requests("discord", "channels.messages"))
      .filter((r) => r.path.endsWith(inChannel(chat)))
      .map((r) => ({ at: epochMs(r), fault: r.fault ?? false }));
  },
  async faultSend(chat, _file, fault, retryAfter = 1) {
    const answers = {
      rateLimited: {
        status: 429,
        body: { message: "You are being rate limited.", retry_after: retryAfter, global: false },
        headers: { "retry-after": String(Math.ceil(retryAfter)) },
      },
      refused: { status: 403, body: { message: "Missing Access", code: 50001 } },
      tooLarge: { status: 413, body: { message: "Request entity too large", code: 40005 } },
    };
    await scriptFault("discord", "channels.messages", { path: inChannel(chat) }, answers[fault]);
  },
  reasons: { refused: "Missing Access", tooLarge: "Request entity too large" },
  addAttachment: (name, bytes) => fakes.addFile<DiscordRef>("discord", name, bytes),
  async webhook(chat, ref, name) {
    const body = JSON.stringify({
      id: uniqueChatId(),
      type: 2,
      application_id: "1",
      token: "t",
      version: 1,
      channel: { id: chat, type: 0 },
      channel_id: chat,
      data: {
        id: "9",
        name: "send",
        type: 1,
        options: [{ name: "file", type: 11, value: ref.id }],
        resolved: { attachments: { [ref.id]: { ...ref, filename: name, proxy_url: ref.url } } },
      },
    });
    return { body, headers: await signed(body) };
  },
  async forgeries({ body, headers }) {
    return [
      { body, headers: await signed(body, other) },
      { body, headers: { "content-type": "application/json" } },
      { body: body.replace('"send"', '"sent"'), headers },
    ];
  },
  async downloadsOf(ref) {
    return (await fakes.requests("discord", "attachments")).filter((r) =>
      r.path.includes(`/${ref.id}/`),
    );
  },
  downloadAuth: null,
};
