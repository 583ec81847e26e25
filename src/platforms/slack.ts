import { ErrorCode, WebClient, type WebAPICallError } from "@slack/web-api";
import { timingSafeEqual } from "hono/utils/buffer";
import { hmacSha256Hex } from "../auth/hmac";
import { AppError } from "../errors";
import { cleanFileName } from "../names";
import { withKnownLength } from "../content/known-length";
import {
  PlatformError,
  type InboundAttachment,
  type OutgoingFile,
  type Platform,
  type SentMessage,
  type WebhookEvent,
} from "./platform";
import { fetchFromAllowedHost } from "./streams";

export interface SlackConfig {
  botToken: string;
  signingSecret?: string;
  apiUrl: string;
  fileHosts: string[];
}

/** Slack's signing scheme rejects requests older than five minutes as replays. */
const MAX_WEBHOOK_AGE_SECONDS = 300;

interface SlackFile {
  id: string;
  name?: string;
  size?: number;
  mimetype?: string;
  url_private_download?: string;
  url_private?: string;
}

interface SlackEnvelope {
  type: string;
  challenge?: string;
  event_id?: string;
  team_id?: string;
  /** Who the event is delivered for: with a bot token, the app's own bot user (`is_bot`). */
  authorizations?: { user_id?: string; is_bot?: boolean }[];
  event?: {
    type: string;
    user_id?: string;
    channel?: string;
    channel_id?: string;
    file_id?: string;
    bot_id?: string;
    ts?: string;
    event_ts?: string;
    files?: SlackFile[];
  };
}

/** Slack through @slack/web-api's WebClient, pointed at `SLACK_API_URL`. */
export class SlackPlatform implements Platform {
  readonly name = "slack";
  private readonly client: WebClient;

  constructor(private readonly config: SlackConfig) {
    this.client = new WebClient(config.botToken, {
      slackApiUrl: config.apiUrl,
      // workerd rejects redirect: "error" and calling fetch unbound ("Illegal invocation").
      fetch: (input, init) =>
        fetch(input, { ...init, redirect: init?.redirect === "error" ? "manual" : init?.redirect }),
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
    });
  }

  async sendFile(target: string, file: OutgoingFile, caption?: string): Promise<SentMessage> {
    const upload = await this.call(() =>
      this.client.files.getUploadURLExternal({ filename: file.name, length: file.size }),
    );
    if (!upload.upload_url || !upload.file_id)
      throw new PlatformError("slack", 502, "no upload URL in Slack's answer");
    const posted = await fetch(upload.upload_url, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: withKnownLength(await file.open(), file.size),
    });
    if (!posted.ok)
      throw new PlatformError(
        "slack",
        posted.status,
        `upload refused: ${(await posted.text()).slice(0, 200)}`,
      );
    await this.call(() =>
      this.client.files.completeUploadExternal({
        files: [{ id: upload.file_id!, title: file.name }],
        channel_id: target,
        ...(caption ? { initial_comment: escapeText(caption) } : {}),
      }),
    );
    return { messageId: upload.file_id, method: "files.completeUploadExternal" };
  }

  async sendText(target: string, text: string): Promise<SentMessage> {
    const posted = await this.call(() =>
      this.client.chat.postMessage({
        channel: target,
        text: escapeText(text),
        unfurl_links: false,
      }),
    );
    return { messageId: posted.ts ?? "", method: "chat.postMessage" };
  }

  async verifyWebhook(
    request: Request,
    rawBody: () => Promise<string>,
    now: number,
  ): Promise<void> {
    const secret = this.config.signingSecret;
    const timestamp = request.headers.get("x-slack-request-timestamp");
    const signature = request.headers.get("x-slack-signature");
    if (!secret || !timestamp || !signature || !/^\d{1,12}$/.test(timestamp))
      throw new AppError("webhook_unauthorized");
    if (Math.abs(now / 1000 - Number(timestamp)) > MAX_WEBHOOK_AGE_SECONDS) {
      throw new AppError("webhook_unauthorized", "webhook timestamp is too old or in the future");
    }
    const expected = `v0=${await hmacSha256Hex(secret, `v0:${timestamp}:${await rawBody()}`)}`;
    if (!(await timingSafeEqual(expected, signature))) throw new AppError("webhook_unauthorized");
  }

  async parseWebhook(rawBody: string): Promise<WebhookEvent> {
    // Slash commands come form-encoded to the same Request URL, signed the same way.
    if (!rawBody.trimStart().startsWith("{")) return slashCommand(new URLSearchParams(rawBody));
    const envelope = JSON.parse(rawBody) as SlackEnvelope;
    if (envelope.type === "url_verification") {
      return {
        response: Response.json({ challenge: envelope.challenge }),
        attachments: [],
        refused: [],
      };
    }
    const event = envelope.event;
    const result: WebhookEvent = {
      response: new Response(null, { status: 200 }),
      attachments: [],
      refused: [],
    };
    if (envelope.type !== "event_callback" || !event || event.bot_id) return result;
    if (event.type === "file_shared" && sharedByOwnBot(envelope)) return result;
    const channel = event.channel ?? event.channel_id;
    if (channel) result.chat = `slack:${channel}`;
    if (event.type === "message") {
      for (const file of event.files ?? []) {
        if (typeof file?.id === "string" && file.id !== "")
          result.attachments.push({ ...attachmentOf(file), key: fileKey(channel, file.id) });
      }
    } else if (event.type === "file_shared" && typeof event.file_id === "string") {
      result.attachments.push({
        name: cleanFileName(event.file_id, "file"),
        size: null,
        ref: { fileId: event.file_id },
        key: fileKey(channel, event.file_id),
      });
    }
    result.eventKey = eventKeyOf(envelope, channel, result.attachments);
    return result;
  }

  async fetchAttachment(
    ref: InboundAttachment["ref"],
  ): Promise<{ body: ReadableStream<Uint8Array>; size: number }> {
    let url = typeof ref.url === "string" ? ref.url : undefined;
    if (!url) {
      const info = await this.call(() => this.client.files.info({ file: String(ref.fileId) }));
      url = info.file?.url_private_download ?? info.file?.url_private;
    }
    if (!url) throw new Error("Slack gave no download URL for the file");
    return fetchFromAllowedHost(url, this.config.fileHosts, {
      headers: { authorization: `Bearer ${this.config.botToken}` },
    });
  }

  private async call<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      throw toPlatformError(error as WebAPICallError);
    }
  }
}

/** One Slack file shared into one channel, whichever event (or replay) brings it. */
function fileKey(channel: string | undefined, fileId: string): string {
  return `slack:file:${channel ?? ""}:${fileId}`;
}

/**
 * A `file_shared` event carries no `bot_id`, only the sharing user's id: a file the relay's
 * bot shared (a delivery) is told by that id being the bot user the event was sent for.
 */
function sharedByOwnBot(envelope: SlackEnvelope): boolean {
  const sharer = envelope.event?.user_id;
  return (
    sharer !== undefined &&
    (envelope.authorizations ?? []).some((auth) => auth.is_bot === true && auth.user_id === sharer)
  );
}

/**
 * Slack's `event_id`, or — for an event without one — a key derived from what makes the
 * event itself (team, channel, message time, file ids), so a replay within the signature's
 * five minutes is stored once.
 */
function eventKeyOf(
  envelope: SlackEnvelope,
  channel: string | undefined,
  attachments: InboundAttachment[],
): string | undefined {
  if (typeof envelope.event_id === "string" && envelope.event_id !== "")
    return `slack:${envelope.event_id}`;
  const event = envelope.event;
  const ts = event?.ts ?? event?.event_ts;
  const files = attachments.map((a) => String(a.ref.fileId));
  if (!ts && files.length === 0) return undefined;
  const parts = [envelope.team_id, channel, event?.type, ts, files.join(",")];
  return `slack:derived:${parts.map((p) => p ?? "").join(":")}`;
}

/** `/airlock` asks for the channel's destination id; the answer only the asker sees. */
function slashCommand(form: URLSearchParams): WebhookEvent {
  const event: WebhookEvent = { response: new Response(null), attachments: [], refused: [] };
  const channel = form.get("channel_id");
  if (form.get("command") !== "/airlock" || !channel) return event;
  const reply = (text: string) =>
    Response.json({ response_type: "ephemeral", text: escapeText(text) });
  return { ...event, chat: `slack:${channel}`, asksChatId: true, reply };
}

function attachmentOf(file: SlackFile): InboundAttachment {
  const url = file.url_private_download ?? file.url_private;
  const { name, size } = file;
  return {
    name: cleanFileName(typeof name === "string" ? name : "", cleanFileName(file.id, "file")),
    size: typeof size === "number" && Number.isSafeInteger(size) && size >= 0 ? size : null,
    contentType: file.mimetype,
    ref: url ? { fileId: file.id, url } : { fileId: file.id },
  };
}

/**
 * Slack reads `<…>` in message text as links and mentions (`<!channel>` pings everyone):
 * text and captions, which may carry a person's file name or words, are sent with `&`, `<`
 * and `>` escaped, as Slack asks (Discord's answers likewise mention nobody).
 */
function escapeText(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function toPlatformError(error: WebAPICallError): Error {
  switch (error.code) {
    case ErrorCode.PlatformError:
      return new PlatformError("slack", 400, error.data.error);
    case ErrorCode.RateLimitedError:
      return new PlatformError("slack", 429, "rate limited", error.retryAfter);
    case ErrorCode.HTTPError:
      return new PlatformError(
        "slack",
        error.statusCode,
        error.statusMessage || `HTTP ${error.statusCode}`,
      );
    default:
      return error;
  }
}
