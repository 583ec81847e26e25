import type { MediaKind } from "./media-kind";

export type PlatformName = "telegram" | "discord" | "slack" | "whatsapp";

/** A file to upload to a chat. `open` streams the original bytes afresh for each attempt. */
export interface OutgoingFile {
  name: string;
  size: number;
  contentType: string;
  kind: MediaKind;
  open(): Promise<ReadableStream<Uint8Array>>;
  /**
   * The platform's handle for this very content from an earlier upload (Telegram `file_id`,
   * WhatsApp media id): sent instead of the bytes. A handle the platform no longer takes
   * fails with `StaleHandleError`.
   */
  handle?: string;
}

/** What a platform answered for a posted message or file. */
export interface SentMessage {
  messageId: string;
  method: string;
  /** The platform's handle for the content just uploaded, to send it again without the bytes. */
  handle?: string;
}

/** How a platform that can re-send uploaded content by handle keeps those handles. */
export interface HandlePolicy {
  /** Handles are valid only for this bot or phone number (Telegram bot id, WhatsApp phone number id). */
  account: string;
  /** How long a handle stays valid, or null when the platform names no limit. */
  ttlMs: number | null;
  /** The handle carries the file name it was uploaded under (Telegram documents): reuse needs the same name. */
  carriesName: boolean;
}

/** A file a person attached in a chat, with what the relay needs to fetch it later. */
export interface InboundAttachment {
  name: string;
  size: number | null;
  contentType?: string;
  /** Platform-specific reference, stored as JSON until the fetch succeeds. */
  ref: Record<string, string | number>;
  /**
   * The attachment's own key, where one file can come in more than one event (Slack sends a
   * share as a message and as a `file_shared` event): it is taken once. Otherwise the event's
   * key and the attachment's place in it.
   */
  key?: string;
}

/** An attachment the relay will not take, with why, to explain in the chat. */
export interface Refusal {
  name: string;
  reason: string;
}

/** What a verified webhook asks of the relay. */
export interface WebhookEvent {
  /** The answer to give the platform at once. */
  response: Response;
  /**
   * For platforms that answer in the webhook's response itself (Discord interactions):
   * the answer once the relay knows which attachments it refused. Without it, refusals
   * are posted to the chat as a message.
   */
  respond?: (refused: Refusal[]) => Response;
  /** The chat the event came from (`platform:id`), when it came from one. */
  chat?: string;
  /** Unique per platform event, so a redelivered webhook is stored once. */
  eventKey?: string;
  attachments: InboundAttachment[];
  /** Attachments the relay cannot take (e.g. over a download limit), to explain in the chat. */
  refused: Refusal[];
  /** Further events carried in the same webhook (WhatsApp batches messages from several people). */
  more?: WebhookEvent[];
  /**
   * The person asked for this chat's destination id (`/airlock`): the relay answers with it
   * and nothing else, and stores nothing from the event.
   */
  asksChatId?: boolean;
  /**
   * For commands answered in the webhook's response itself (Discord interactions, Slack
   * slash commands): the response that shows `text` in the chat. Without it the relay posts
   * the answer as a message.
   */
  reply?: (text: string) => Response;
}

/**
 * One chat platform. Each adapter lives in its own module; the relay sees only this.
 * Errors: a `PlatformError` when the platform refused, anything else when the network failed.
 */
export interface Platform {
  readonly name: PlatformName;
  /** Present on platforms that can send uploaded content again by a handle. */
  readonly handles?: HandlePolicy;
  sendFile(target: string, file: OutgoingFile, caption?: string): Promise<SentMessage>;
  sendText(target: string, text: string): Promise<SentMessage>;
  /**
   * `text` (a file name) escaped so that a message shows it as it is, on a platform that reads
   * markup in messages; platforms whose messages are plain text leave it out.
   */
  literal?(text: string): string;
  /**
   * Throws `AppError("webhook_unauthorized")` unless the request provably comes from the
   * platform. `rawBody` reads the (size-capped) body: only platforms that sign the body call
   * it, so a header-only proof (Telegram's secret) is checked before a byte is read.
   */
  verifyWebhook(request: Request, rawBody: () => Promise<string>, now: number): Promise<void>;
  parseWebhook(rawBody: string): Promise<WebhookEvent>;
  /**
   * Answers a `GET` to the webhook URL (WhatsApp's subscription handshake); platforms
   * without one leave it out and the route answers 404.
   */
  answerSubscription?(query: URLSearchParams): Promise<Response>;
  /** Streams an attachment from the platform's own hosts only. */
  fetchAttachment(
    ref: InboundAttachment["ref"],
  ): Promise<{ body: ReadableStream<Uint8Array>; size: number }>;
}

/** The platform answered and refused (grammY's GrammyError split): not worth a blind retry unless 429/5xx. */
export class PlatformError extends Error {
  constructor(
    readonly platform: PlatformName,
    readonly status: number,
    readonly reason: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(`${platform} refused: ${reason}`);
    this.name = "PlatformError";
  }

  get retryable(): boolean {
    return this.status === 429 || this.status >= 500;
  }
}

/** The platform no longer accepts a stored handle (expired media id, unknown `file_id`): upload afresh. */
export class StaleHandleError extends PlatformError {
  override name = "StaleHandleError";
}
