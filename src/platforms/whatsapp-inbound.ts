import { cleanFileName } from "../names";
import type { WebhookEvent } from "./platform";

/** The media message types a person can send that carry a file. */
const INBOUND_MEDIA = ["document", "image", "audio", "video", "voice", "sticker"] as const;

const EXTENSIONS: Record<string, string> = {
  "image/jpeg": ".jpg",
  "image/png": ".png",
  "image/webp": ".webp",
  "video/mp4": ".mp4",
  "video/3gpp": ".3gp",
  "audio/ogg": ".ogg",
  "audio/mpeg": ".mp3",
  "audio/aac": ".aac",
  "audio/amr": ".amr",
  "audio/mp4": ".m4a",
};

interface InboundMedia {
  id?: unknown;
  mime_type?: unknown;
  filename?: unknown;
}

export interface InboundMessage {
  from?: unknown;
  id?: unknown;
  type?: unknown;
  [media: string]: unknown;
}

export interface WhatsAppEnvelope {
  object?: string;
  entry?: {
    changes?: {
      field?: string;
      value?: {
        metadata?: { phone_number_id?: string };
        messages?: InboundMessage[];
        statuses?: unknown[];
      };
    }[];
  }[];
}

/** The event for one message a person sent: its media, if any, under the sender's chat. */
export function eventOf(message: InboundMessage): WebhookEvent | null {
  const from = typeof message.from === "string" ? message.from : "";
  const id = typeof message.id === "string" ? message.id : "";
  if (!/^\d{1,20}$/.test(from) || id === "") return null;
  const event: WebhookEvent = {
    response: new Response(null, { status: 200 }),
    chat: `whatsapp:${from}`,
    eventKey: `whatsapp:${id}`,
    attachments: [],
    refused: [],
  };
  if (message.type === "text" && /^\/?airlock$/i.test(textOf(message).trim()))
    return { ...event, asksChatId: true };
  const type = INBOUND_MEDIA.find((t) => t === message.type);
  const media = type ? (message[type] as InboundMedia | undefined) : undefined;
  if (!type || !media || typeof media.id !== "string" || media.id === "") return event;
  const mime = typeof media.mime_type === "string" ? media.mime_type : undefined;
  const bare = mime?.split(";")[0]?.trim().toLowerCase() ?? "";
  const fallback = cleanFileName(`${type}-${media.id}${EXTENSIONS[bare] ?? ""}`, type);
  const given = typeof media.filename === "string" ? media.filename : "";
  event.attachments.push({
    name: cleanFileName(given, fallback),
    // The webhook does not say how big the media is; the download's length is checked.
    size: null,
    contentType: bare || undefined,
    ref: { mediaId: media.id },
  });
  return event;
}

/** A text message's words (`text.body`), or "" when it has none. */
function textOf(message: InboundMessage): string {
  const text = message.text as { body?: unknown } | undefined;
  return typeof text?.body === "string" ? text.body : "";
}
