import { ErrorCode, WebClient, type WebAPICallError } from "@slack/web-api";
import { timingSafeEqual } from "hono/utils/buffer";
import { hmacSha256Hex } from "../auth/hmac";
import { AppError } from "../errors";
import { withKnownLength } from "../storage/known-length";
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
  event?: {
    type: string;
    channel?: string;
    channel_id?: string;
    file_id?: string;
    bot_id?: string;
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
        ...(caption ? { initial_comment: caption } : {}),
      }),
    );
    return { messageId: upload.file_id, method: "files.completeUploadExternal" };
  }

  async sendText(target: string, text: string): Promise<SentMessage> {
    const posted = await this.call(() =>
      this.client.chat.postMessage({ channel: target, text, unfurl_links: false }),
    );
    return { messageId: posted.ts ?? "", method: "chat.postMessage" };
  }

  async verifyWebhook(request: Request, rawBody: string, now: number): Promise<void> {
    const secret = this.config.signingSecret;
    const timestamp = request.headers.get("x-slack-request-timestamp");
    const signature = request.headers.get("x-slack-signature");
    if (!secret || !timestamp || !signature || !/^\d{1,12}$/.test(timestamp))
      throw new AppError("webhook_unauthorized");
    if (Math.abs(now / 1000 - Number(timestamp)) > MAX_WEBHOOK_AGE_SECONDS) {
      throw new AppError("webhook_unauthorized", "webhook timestamp is too old or in the future");
    }
    const expected = `v0=${await hmacSha256Hex(secret, `v0:${timestamp}:${rawBody}`)}`;
    if (!(await timingSafeEqual(expected, signature))) throw new AppError("webhook_unauthorized");
  }

  async parseWebhook(rawBody: string): Promise<WebhookEvent> {
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
    const channel = event.channel ?? event.channel_id;
    if (channel) result.chat = `slack:${channel}`;
    result.eventKey = envelope.event_id ? `slack:${envelope.event_id}` : undefined;
    if (event.type === "message") {
      for (const file of event.files ?? []) result.attachments.push(attachmentOf(file));
    } else if (event.type === "file_shared" && event.file_id) {
      result.attachments.push({ name: event.file_id, size: null, ref: { fileId: event.file_id } });
    }
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

function attachmentOf(file: SlackFile): InboundAttachment {
  const url = file.url_private_download ?? file.url_private;
  return {
    name: file.name ?? file.id,
    size: file.size ?? null,
    contentType: file.mimetype,
    ref: url ? { fileId: file.id, url } : { fileId: file.id },
  };
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
