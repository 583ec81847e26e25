import { uniqueChatId } from "../../support/platform-fakes";
import { nowSeconds, slackSignature } from "../../support/webhook-signing";
import { epochMs, fakes, scriptFault, type ChatPlatformHarness } from "./harness";

const SECRET = "slack-signing-secret-for-the-contract";

interface SlackRef {
  id: string;
  name: string;
  size: number;
  url_private: string;
  url_private_download: string;
}

async function signed(body: string, secret = SECRET) {
  const timestamp = nowSeconds();
  return {
    "content-type": "application/json",
    "x-slack-request-timestamp": timestamp,
    "x-slack-signature": await slackSignature(secret, timestamp, body),
  };
}

/** Slack through @slack/web-api's WebClient (external upload flow); events signed with v0 HMAC. */
export const slack: ChatPlatformHarness<SlackRef> = {
  name: "slack",
  env: { SLACK_SIGNING_SECRET: SECRET },
  documentLimit: "SLACK_MAX_UPLOAD_BYTES",
  newChat: () => `C${uniqueChatId()}`,
  methods: {
    photo: "files.completeUploadExternal",
    document: "files.completeUploadExternal",
    link: "chat.postMessage",
  },
  // A shared file's id, or a posted message's ts.
  messageId: /^(F[0-9A-F]{10}|\d+\.\d{6})$/,
  async filesSentTo(chat, sha256) {
    const completes = (await fakes.requests("slack", "files.completeUploadExternal")).filter(
      (r) => r.fields.channel_id === chat && !r.fault,
    );
    const uploads = await fakes.requests("slack", "upload");
    return completes.flatMap((r) =>
      (JSON.parse(r.fields.files ?? "[]") as { id: string; title: string }[]).flatMap((f) => {
        const bytes = uploads.find((u) => u.path.endsWith(`/${f.id}`))?.files[0];
        if (bytes?.sha256 !== sha256) return [];
        return [{ name: f.title, size: bytes.size, sha256, caption: r.fields.initial_comment }];
      }),
    );
  },
  async textsTo(chat) {
    return (await fakes.requests("slack", "chat.postMessage"))
      .filter((r) => r.fields.channel === chat)
      .map((r) => r.fields.text ?? "");
  },
  async sendAttempts(chat) {
    return (await fakes.requests("slack", "files.completeUploadExternal"))
      .filter((r) => r.fields.channel_id === chat)
      .map((r) => ({ at: epochMs(r), fault: r.fault ?? false }));
  },
  async faultSend(chat, file, fault, retryAfter = 1) {
    if (fault === "tooLarge") {
      // Slack refuses the size when asked for an upload URL, before any byte goes up.
      await scriptFault(
        "slack",
        "files.getUploadURLExternal",
        { fields: { filename: file.name } },
        { status: 200, body: { ok: false, error: "file_upload_size_restricted" } },
      );
      return;
    }
    const answer =
      fault === "rateLimited"
        ? {
            status: 429,
            body: { ok: false, error: "ratelimited" },
            headers: { "retry-after": String(retryAfter) },
          }
        : { status: 200, body: { ok: false, error: "not_in_channel" } };
    await scriptFault(
      "slack",
      "files.completeUploadExternal",
      { fields: { channel_id: chat } },
      answer,
    );
  },
  reasons: { refused: "not_in_channel", tooLarge: "file_upload_size_restricted" },
  addAttachment: (name, bytes) => fakes.addFile<SlackRef>("slack", name, bytes),
  async webhook(chat, ref, name) {
    const body = JSON.stringify({
      type: "event_callback",
      event_id: `Ev${uniqueChatId()}`,
      event: { type: "message", subtype: "file_share", channel: chat, files: [{ ...ref, name }] },
    });
    return { body, headers: await signed(body) };
  },
  async forgeries({ body, headers }) {
    return [
      { body, headers: await signed(body, "another-secret") },
      { body, headers: { "content-type": "application/json" } },
      { body: body.replace("file_share", "file_shore"), headers },
    ];
  },
  async downloadsOf(ref) {
    return (await fakes.requests("slack", "private")).filter((r) => r.path.includes(ref.id));
  },
  downloadAuth: "Bearer",
};
