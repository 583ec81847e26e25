import { timingSafeEqual } from "hono/utils/buffer";
import { hmacSha256Hex } from "../auth/hmac";
import { AppError } from "../errors";
import type { MediaKind } from "./media-kind";
import { multipartBody } from "./multipart-body";
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
import { fetchFromAllowedHost } from "./streams";
import { isMediaRefusal, toPlatformError, type GraphError } from "./whatsapp-errors";
import { eventOf, type WhatsAppEnvelope } from "./whatsapp-inbound";

export interface WhatsAppConfig {
  accessToken: string;
  phoneNumberId: string;
  /** Webhooks are refused (401) without it. */
  appSecret?: string;
  /** The subscription handshake is refused (403) without it. */
  verifyToken?: string;
  /** The Graph API root including its version, without a trailing slash. */
  apiBase: string;
  mediaHosts: string[];
}

/** WhatsApp keeps uploaded media for 30 days; a media id is reused for a day less. */
const MEDIA_ID_TTL_MS = 29 * 86_400_000;

const MESSAGE_TYPE: Record<MediaKind, "image" | "video" | "audio" | "document"> = {
  photo: "image",
  video: "video",
  audio: "audio",
  document: "document",
};

/** WhatsApp through the Cloud API (Graph API at `WHATSAPP_API_BASE`), with plain fetch. */
export class WhatsAppPlatform implements Platform {
  readonly name = "whatsapp";
  readonly handles: HandlePolicy;

  constructor(private readonly config: WhatsAppConfig) {
    this.handles = { account: config.phoneNumberId, ttlMs: MEDIA_ID_TTL_MS, carriesName: false };
  }

  /**
   * Uploads the bytes (`POST /{phone-number-id}/media`) unless a media id is given, then sends
   * a message naming the media. The media id comes back as the handle for a later re-send.
   */
  async sendFile(target: string, file: OutgoingFile, caption?: string): Promise<SentMessage> {
    const type = MESSAGE_TYPE[file.kind];
    const mediaId = file.handle ?? (await this.upload(file));
    const media: Record<string, string> = { id: mediaId };
    // Audio messages take no caption; it follows as a text message instead.
    if (caption && type !== "audio") media.caption = caption;
    if (type === "document") media.filename = file.name;
    let messageId: string;
    try {
      messageId = await this.message(target, { type, [type]: media });
    } catch (error) {
      if (file.handle && error instanceof PlatformError && isMediaRefusal(error)) {
        throw new StaleHandleError("whatsapp", error.status, error.reason);
      }
      throw error;
    }
    if (caption && type === "audio") await this.sendText(target, caption);
    return { messageId, method: `messages.${type}`, handle: mediaId };
  }

  async sendText(target: string, text: string): Promise<SentMessage> {
    const messageId = await this.message(target, {
      type: "text",
      text: { preview_url: false, body: text },
    });
    return { messageId, method: "messages.text" };
  }

  /** `X-Hub-Signature-256`: HMAC-SHA256 of the raw body under the app secret. */
  async verifyWebhook(request: Request, rawBody: () => Promise<string>): Promise<void> {
    const secret = this.config.appSecret;
    const given = request.headers.get("x-hub-signature-256");
    if (!secret || !given || !given.startsWith("sha256="))
      throw new AppError("webhook_unauthorized");
    const expected = `sha256=${await hmacSha256Hex(secret, await rawBody())}`;
    if (!(await timingSafeEqual(expected, given.toLowerCase())))
      throw new AppError("webhook_unauthorized");
  }

  /** Meta's subscription handshake: echo `hub.challenge` when the verify token matches. */
  async answerSubscription(query: URLSearchParams): Promise<Response> {
    const token = this.config.verifyToken;
    const given = query.get("hub.verify_token");
    const challenge = query.get("hub.challenge");
    const matches = !!token && !!given && (await timingSafeEqual(given, token));
    if (query.get("hub.mode") !== "subscribe" || !matches || !challenge || challenge.length > 200)
      throw new AppError("forbidden", "webhook verification failed");
    return new Response(challenge, {
      status: 200,
      headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
    });
  }

  /**
   * Messages to this phone number, one event per message (so each is stored once by its id);
   * status callbacks and messages to other numbers of the same app are acknowledged and ignored.
   */
  async parseWebhook(rawBody: string): Promise<WebhookEvent> {
    const envelope = JSON.parse(rawBody) as WhatsAppEnvelope;
    const events: WebhookEvent[] = [];
    for (const entry of envelope.entry ?? []) {
      for (const change of entry.changes ?? []) {
        const value = change.value;
        if (change.field !== "messages" || !value) continue;
        if (value.metadata?.phone_number_id !== this.config.phoneNumberId) continue;
        for (const message of value.messages ?? []) {
          const event = eventOf(message);
          if (event) events.push(event);
        }
      }
    }
    const [first, ...more] = events;
    const empty: WebhookEvent = {
      response: new Response(null, { status: 200 }),
      attachments: [],
      refused: [],
    };
    return first ? { ...first, more } : empty;
  }

  /** `GET /{media-id}` for a short-lived URL, then the bytes from an allowed host, with the token. */
  async fetchAttachment(
    ref: InboundAttachment["ref"],
  ): Promise<{ body: ReadableStream<Uint8Array>; size: number }> {
    const id = encodeURIComponent(String(ref.mediaId));
    const phone = encodeURIComponent(this.config.phoneNumberId);
    const info = await this.graph<{ url?: unknown }>(`/${id}?phone_number_id=${phone}`, {
      method: "GET",
    });
    if (typeof info.url !== "string") throw new Error("WhatsApp gave no URL for the media");
    return fetchFromAllowedHost(info.url, this.config.mediaHosts, {
      headers: { authorization: `Bearer ${this.config.accessToken}` },
    });
  }

  /** Streams the file up as multipart (`file`, `type`, `messaging_product`); returns its media id. */
  private async upload(file: OutgoingFile): Promise<string> {
    const multipart = multipartBody(
      { messaging_product: "whatsapp", type: file.contentType },
      {
        field: "file",
        filename: file.name,
        contentType: file.contentType,
        size: file.size,
        stream: await file.open(),
      },
    );
    const uploaded = await this.graph<{ id?: unknown }>(
      `/${encodeURIComponent(this.config.phoneNumberId)}/media`,
      {
        method: "POST",
        headers: { "content-type": multipart.contentType },
        body: multipart.body,
      },
    );
    if (typeof uploaded.id !== "string" || uploaded.id === "")
      throw new PlatformError("whatsapp", 502, "no media id in WhatsApp's answer to the upload");
    return uploaded.id;
  }

  /** Posts a message to a person; returns WhatsApp's message id (`wamid.…`). */
  private async message(to: string, content: Record<string, unknown>): Promise<string> {
    const answer = await this.graph<{ messages?: { id?: unknown }[] }>(
      `/${encodeURIComponent(this.config.phoneNumberId)}/messages`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          messaging_product: "whatsapp",
          recipient_type: "individual",
          to,
          ...content,
        }),
      },
    );
    const id = answer.messages?.[0]?.id;
    if (typeof id !== "string" || id === "")
      throw new PlatformError("whatsapp", 502, "no message id in WhatsApp's answer");
    return id;
  }

  private async graph<T>(path: string, init: RequestInit): Promise<T> {
    const response = await fetch(`${this.config.apiBase}${path}`, {
      ...init,
      headers: { ...init.headers, authorization: `Bearer ${this.config.accessToken}` },
      redirect: "manual",
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!response.ok) throw toPlatformError(response, json as GraphError | undefined, text);
    if (json === undefined) throw new PlatformError("whatsapp", 502, "answer is not JSON");
    return json as T;
  }
}
