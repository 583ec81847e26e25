import type { Message, Update } from "@grammyjs/types";
import { Api, GrammyError, InputFile } from "grammy";
import { timingSafeEqual } from "hono/utils/buffer";
import { AppError } from "../errors";
import { logEvent } from "../log";
import { cleanFileName } from "../names";
import {
  PlatformError,
  StaleHandleError,
  type HandlePolicy,
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
  /** A `file_id` is valid only for the bot that got it, and (for documents) keeps its name. */
  readonly handles: HandlePolicy;
  private readonly api: Api;

  constructor(private readonly config: TelegramConfig) {
    // grammY aborts a call after `timeoutSeconds` (500 by default): far too short for 50 MB —
    // or 2000 MB through a self-hosted Bot API server — on a slow link. The platform's own
    // answer (or the runtime's connection limits) ends a call instead.
    this.api = new Api(config.botToken, { apiRoot: config.apiRoot, timeoutSeconds: 24 * 3600 });
    this.handles = { account: config.botToken.split(":")[0] ?? "", ttlMs: null, carriesName: true };
  }

  async sendFile(target: string, file: OutgoingFile, caption?: string): Promise<SentMessage> {
    const method = SEND_METHOD[file.kind];
    // A `file_id` string is sent as it is; bytes go as a stream, which grammY's web build
    // takes as an async iterable (it has no lazy suppliers).
    const input = file.handle ?? new InputFile(iterate(await file.open()), file.name);
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
    }, file.handle);
    return { messageId: String(message.message_id), method, handle: fileIdOf(message, file.kind) };
  }

  async sendText(target: string, text: string): Promise<SentMessage> {
    const message = await this.call(() =>
      this.api.sendMessage(target, text, { link_preview_options: { is_disabled: true } }),
    );
    return { messageId: String(message.message_id), method: "sendMessage" };
  }

  /** Telegram's proof is a header alone: the body is not read before it is checked. */
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
    // `/airlock`, or `/airlock@<bot>` as a group shows it.
    if (/^\/airlock(@\w+)?(\s|$)/i.test(message.text ?? "")) return { ...event, asksChatId: true };
    for (const attachment of attachmentsOf(message, update.update_id)) {
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

  private async call<T>(request: () => Promise<T>, handle?: string): Promise<T> {
    try {
      return await request();
    } catch (error) {
      if (error instanceof GrammyError) {
        if (
          handle &&
          error.error_code === 400 &&
          /file[ _]?(identifier|id|reference)/i.test(error.description)
        )
          throw new StaleHandleError("telegram", 400, error.description);
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

/**
 * The `file_id` of what a send just posted, as the kind it was sent as: a photo's (largest
 * size) is not a document's. None when Telegram filed it as another kind.
 */
function fileIdOf(message: Message, kind: OutgoingFile["kind"]): string | undefined {
  const media =
    kind === "photo" ? message.photo?.[message.photo.length - 1] : (message[kind] ?? undefined);
  return typeof media?.file_id === "string" && media.file_id !== "" ? media.file_id : undefined;
}

interface TelegramMedia {
  file_id?: unknown;
  file_unique_id?: unknown;
  file_size?: unknown;
  file_name?: unknown;
  mime_type?: unknown;
}

/**
 * Documents, the largest photo size, video, audio and voice notes of a message. Names are
 * cleaned by the one name rule; media without a `file_id` cannot be fetched and are skipped.
 */
function attachmentsOf(message: Message, updateId: number): InboundAttachment[] {
  const found: InboundAttachment[] = [];
  const add = (kind: string, media: TelegramMedia, extension: string, contentType?: string) => {
    if (typeof media.file_id !== "string" || media.file_id === "") {
      logEvent("attachment_skipped", { updateId, kind, reason: "no file_id" }, "warn");
      return;
    }
    const unique = typeof media.file_unique_id === "string" ? `-${media.file_unique_id}` : "";
    const fallback = cleanFileName(`${kind}${unique}${extension}`, `${kind}${extension}`);
    const given = typeof media.file_name === "string" ? media.file_name : "";
    const size = media.file_size;
    const type = typeof media.mime_type === "string" ? media.mime_type : contentType;
    found.push({
      name: cleanFileName(given, fallback),
      size: typeof size === "number" && Number.isSafeInteger(size) && size >= 0 ? size : null,
      contentType: type,
      ref: { fileId: media.file_id },
    });
  };
  if (message.document) add("document", message.document, "");
  if (message.photo && message.photo.length > 0) {
    const largest = message.photo.reduce((a, b) =>
      (b.file_size ?? b.width * b.height) > (a.file_size ?? a.width * a.height) ? b : a,
    );
    // Telegram recompresses photos to JPEG and gives them no name.
    add("photo", largest, ".jpg", "image/jpeg");
  }
  if (message.video) add("video", message.video, ".mp4");
  if (message.audio) add("audio", message.audio, ".mp3");
  if (message.voice) add("voice", message.voice, ".ogg");
  return found;
}
