import type { FaultResponse, RecordedRequestJson } from "../../fixtures/platforms/recorder";
import type { Bindings } from "../../../src/env";
import type { PlatformName } from "../../../src/platforms";
import { PlatformFakes } from "../../support/platform-fakes";

export const fakes = new PlatformFakes();

/** A request to the relay's webhook: its body and headers. */
export interface WebhookRequest {
  body: string;
  headers: Record<string, string>;
}

/** Why a platform refuses a send, as the contract scripts it. */
export type SendFault = "rateLimited" | "refused" | "tooLarge";

/** One attempt at the platform's file-send call for a chat, as the fake recorded it. */
export interface SendAttempt {
  at: number;
  fault: boolean;
}

/**
 * What the chat-platform contract needs to drive one adapter through the relay against its fake
 * server: the relay settings, what a delivery looks like on the platform's side, how the platform
 * words its refusals, and how it signs a webhook carrying an attachment.
 */
export interface ChatPlatformHarness<Ref = unknown> {
  name: PlatformName;
  /** The relay's settings beyond the fakes' URLs and tokens (secrets, hosts). */
  env: Partial<Bindings>;
  /** The setting that caps a plain (document) upload, whose overflow goes as a link. */
  documentLimit: keyof Bindings;
  /** A destination id no other test uses. */
  newChat(): string;
  /** The delivery record's `method` for a photo, a document and a link message. */
  methods: { photo: string; document: string; link: string };
  /** What the platform's message ids look like. */
  messageId: RegExp;
  /** The files of `sha256` posted to `chat` (name, size, SHA-256 and caption), in order. */
  filesSentTo(
    chat: string,
    sha256: string,
  ): Promise<{ name: string; size: number; sha256: string; caption?: string }[]>;
  /** The text messages posted to `chat`, in order. */
  textsTo(chat: string): Promise<string[]>;
  /** Each attempt of the platform call that finishes a file send to `chat`. */
  sendAttempts(chat: string): Promise<SendAttempt[]>;
  /**
   * Scripts the platform's answer to the next file send to `chat` (of a file named `name`, declared
   * as `contentType`): a 429 asking to wait `retryAfter` seconds, a refusal, or "too large".
   */
  faultSend(
    chat: string,
    file: { name: string; contentType: string },
    fault: SendFault,
    retryAfter?: number,
  ): Promise<void>;
  /** Words the relay's error message must carry for each scripted refusal. */
  reasons: Record<Exclude<SendFault, "rateLimited">, string>;
  /** Registers bytes the platform will serve as a person's attachment named `name`. */
  addAttachment(name: string, bytes: Uint8Array): Promise<Ref>;
  /** A signed webhook from `chat` carrying `ref` under the name `name`. */
  webhook(chat: string, ref: Ref, name: string): Promise<WebhookRequest>;
  /** The same webhook with a wrong, a missing and (where the proof covers the body) a tampered proof. */
  forgeries(signed: WebhookRequest): Promise<WebhookRequest[]>;
  /** The fake's downloads of `ref`'s bytes. */
  downloadsOf(ref: Ref): Promise<RecordedRequestJson[]>;
  /** How the relay must authenticate a download (`null`: the URL itself is the credential). */
  downloadAuth: "Bearer" | "path" | null;
}

/** A fault scoped to what only one test sends, so files running at the same time pass it by. */
export async function scriptFault(
  name: PlatformName,
  method: string,
  match: { fields?: Record<string, string>; path?: string },
  response: FaultResponse,
): Promise<void> {
  await fakes.fault(name, { method, match, times: 1, response });
}

export const epochMs = (r: RecordedRequestJson): number => Date.parse(r.at);

/** What the handle contract needs of a platform that sends uploaded content again by a handle. */
export interface HandleHarness<Ref = unknown> extends ChatPlatformHarness<Ref> {
  /** How many uploads of these bytes the platform received, to any chat. */
  uploadsOf(sha256: string): Promise<number>;
  /** The handles the sends to `chat` named, in order. */
  handlesSentTo(chat: string): Promise<string[]>;
  /** A handle the platform does not know (a `file_id` or media id it forgot). */
  staleHandle: string;
}
