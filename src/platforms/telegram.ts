import type { Message, Update } from "@grammyjs/types";
import { Api, GrammyError, InputFile } from "grammy";
import { timingSafeEqual } from "hono/utils/buffer";
import { AppError } from "../errors";
import {
  PlatformError,
  type InboundAttachment,
  type OutgoingFile,
  type Platform,
  type SentMessage,
  type WebhookEvent,
} from "./platform";
import { fetchFromAllowedHost, iterate } from "./streams";

export interface TelegramConfig {
  botToken: string;
  webhookSecret?: string;
  apiRoot: string;
  /** Bots may download files only up to this size (20 MB on the public Bot API). */
  maxDownloadBytes: number;
}

const SEND_METHOD = {
  photo: "sendPhoto",
  video: "sendVideo",
  audio: "sendAudio",
  document: "sendDocument",
} as const;

/** Telegram through grammY's `Api`, pointed at `TELEGRAM_API_ROOT`. */
export class TelegramPlatform implements Platform {
  readonly name = "telegram";
  private readonly api: Api;

  constructor(private readonly config: TelegramConfig) {
    this.api = new Api(config.botToken, { apiRoot: config.apiRoot });
  }

  async sendFile(target: string, file: OutgoingFile, caption?: string): Promise<SentMessage> {
    const method = SEND_METHOD[file.kind];
    // grammY's web build takes a stream as an async iterable (it has no lazy suppliers).
    const input = new InputFile(iterate(await file.open()), file.name);
    const options = caption ? { caption } : {};
    const message = await this.call<Message>(() => {
      switch (method) {
        case "sendPhoto":
          return this.api.sendPhoto(target, input, options);
        case "sendVideo":
          return this.api.sendVideo(target, input, options);
        case "sendAudio":
          return this.api.sendAudio(target, input, options);
        case "sendDocument":
          return this.api.sendDocument(target, input, options);
      }
    });
    return { messageId: String(message.message_id), method };
  }

  async sendText(target: string, text: string): Promise<SentMessage> {
    const message = await this.call(() =>
      this.api.sendMessage(target, text, { link_preview_options: { is_disabled: true } }),
    );
    return { messageId: String(message.message_id), method: "sendMessage" };
  }

  async verifyWebhook(request: Request): Promise<void> {
    const secret = this.config.webhookSecret;
    const given = request.headers.get("x-telegram-bot-api-secret-token");
    if (!secret || !given || !(await timingSafeEqual(given, secret)))
      throw new AppError("webhook_unauthorized");
  }

  async parseWebhook(rawBody: string): Promise<WebhookEvent> {
    const update = JSON.parse(rawBody) as Update;
    const message = update.message ?? update.channel_post;
    const event: WebhookEvent = {
      response: new Response(null, { status: 200 }),
      attachments: [],
      refused: [],
    };
    if (!message) return event;
    event.chat = `telegram:${message.chat.id}`;
    event.eventKey = `telegram:${update.update_id}`;
    for (const attachment of attachmentsOf(message)) {
      if (attachment.size !== null && attachment.size > this.config.maxDownloadBytes) {
        const limit = Math.round(this.config.maxDownloadBytes / 1e6);
        event.refused.push({
          name: attachment.name,
          reason: `Telegram lets bots download files only up to ${limit} MB`,
        });
      } else {
        event.attachments.push(attachment);
      }
    }
    return event;
  }

  async fetchAttachment(
    ref: InboundAttachment["ref"],
  ): Promise<{ body: ReadableStream<Uint8Array>; size: number }> {
    const file = await this.call(() => this.api.getFile(String(ref.fileId)));
    if (!file.file_path) throw new Error("Telegram gave no file_path for the attachment");
    const root = new URL(this.config.apiRoot);
    const url = `${root.origin}${root.pathname.replace(/\/$/, "")}/file/bot${this.config.botToken}/${file.file_path}`;
    return fetchFromAllowedHost(url, [root.host]);
  }

  private async call<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      if (error instanceof GrammyError) {
        throw new PlatformError(
          "telegram",
          error.error_code,
          error.description,
          error.parameters.retry_after,
        );
      }
      throw error;
    }
  }
}

/** Documents, the largest photo size, video, audio and voice notes of a message. */
function attachmentsOf(message: Message): InboundAttachment[] {
  const found: InboundAttachment[] = [];
  const add = (fileId: string, name: string, size: number | undefined, contentType?: string) =>
    found.push({ name, size: size ?? null, contentType, ref: { fileId } });
  if (message.document) {
    const d = message.document;
    add(d.file_id, d.file_name ?? `document-${d.file_unique_id}`, d.file_size, d.mime_type);
  }
  if (message.photo && message.photo.length > 0) {
    const largest = message.photo.reduce((a, b) =>
      (b.file_size ?? b.width * b.height) > (a.file_size ?? a.width * a.height) ? b : a,
    );
    add(largest.file_id, `photo-${largest.file_unique_id}.jpg`, largest.file_size, "image/jpeg");
  }
  if (message.video) {
    const v = message.video;
    add(v.file_id, v.file_name ?? `video-${v.file_unique_id}.mp4`, v.file_size, v.mime_type);
  }
  if (message.audio) {
    const a = message.audio;
    add(a.file_id, a.file_name ?? `audio-${a.file_unique_id}.mp3`, a.file_size, a.mime_type);
  }
  if (message.voice) {
    const v = message.voice;
    add(v.file_id, `voice-${v.file_unique_id}.ogg`, v.file_size, v.mime_type);
  }
  return found;
}
