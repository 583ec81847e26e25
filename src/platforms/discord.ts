import type {
  APIChatInputApplicationCommandInteraction,
  APIInteraction,
  APIMessage,
} from "discord-api-types/v10";
import { InteractionResponseType, InteractionType, verifyKey } from "discord-interactions";
import { AppError } from "../errors";
import { cleanFileName } from "../names";
import { AIRLOCK_COMMAND } from "./discord-commands";
import { multipartBody } from "./multipart-body";
import {
  PlatformError,
  type InboundAttachment,
  type OutgoingFile,
  type Platform,
  type Refusal,
  type SentMessage,
  type WebhookEvent,
} from "./platform";
import { fetchFromAllowedHost } from "./streams";

export interface DiscordConfig {
  botToken: string;
  publicKey?: string;
  apiBase: string;
  attachmentHosts: string[];
}

/** Discord signs the timestamp too; older requests are replays. */
const MAX_WEBHOOK_AGE_SECONDS = 300;
/** ApplicationCommandOptionType.Attachment (discord-interactions has no enum for option types). */
const OPTION_ATTACHMENT = 11;
/** MessageFlags.Ephemeral: only the person who ran the command sees the answer. */
const EPHEMERAL = 64;

/**
 * The characters Discord's markdown reads (emphasis, code, spoilers, quotes, headings, lists,
 * masked links `[text](url)`, mentions and `<...>` tags): each shows as it is after a backslash.
 */
const MARKDOWN = /[\\*_~`|>#\-[\]()<@]/g;

/**
 * A name shown as it is in a Discord message: `__init__.py` would otherwise show `init`
 * underlined, `||x||` a spoiler and `<@1>` a mention, in the bot's own words.
 */
function discordLiteral(text: string): string {
  return text.replace(MARKDOWN, "\\$&");
}

/** Discord over its REST API (`DISCORD_API_BASE`), and its signed interactions webhook. */
export class DiscordPlatform implements Platform {
  readonly name = "discord";

  constructor(private readonly config: DiscordConfig) {}

  literal(text: string): string {
    return discordLiteral(text);
  }

  async sendFile(target: string, file: OutgoingFile, caption?: string): Promise<SentMessage> {
    const payload = {
      content: caption ?? "",
      attachments: [{ id: 0, filename: file.name }],
      allowed_mentions: { parse: [] },
    };
    const multipart = multipartBody(
      { payload_json: JSON.stringify(payload) },
      {
        field: "files[0]",
        filename: file.name,
        contentType: file.contentType,
        size: file.size,
        stream: await file.open(),
      },
    );
    const message = await this.post(
      `/channels/${encodeURIComponent(target)}/messages`,
      multipart.body,
      multipart.contentType,
    );
    return { messageId: message.id, method: "channels.messages" };
  }

  async sendText(target: string, text: string): Promise<SentMessage> {
    const body = JSON.stringify({ content: text, allowed_mentions: { parse: [] } });
    const message = await this.post(
      `/channels/${encodeURIComponent(target)}/messages`,
      body,
      "application/json",
    );
    return { messageId: message.id, method: "channels.messages" };
  }

  async verifyWebhook(
    request: Request,
    rawBody: () => Promise<string>,
    now: number,
  ): Promise<void> {
    const signature = request.headers.get("x-signature-ed25519");
    const timestamp = request.headers.get("x-signature-timestamp");
    const key = this.config.publicKey;
    if (!key || !signature || !timestamp || !/^\d{1,12}$/.test(timestamp))
      throw new AppError("webhook_unauthorized");
    if (Math.abs(now / 1000 - Number(timestamp)) > MAX_WEBHOOK_AGE_SECONDS) {
      throw new AppError("webhook_unauthorized", "webhook timestamp is too old or in the future");
    }
    const valid = await verifyKey(await rawBody(), signature, timestamp, key).catch(() => false);
    if (!valid) throw new AppError("webhook_unauthorized");
  }

  async parseWebhook(rawBody: string): Promise<WebhookEvent> {
    const interaction = JSON.parse(rawBody) as APIInteraction;
    if (interaction.type === (InteractionType.PING as number)) {
      return {
        response: Response.json({ type: InteractionResponseType.PONG }),
        attachments: [],
        refused: [],
      };
    }
    const attachments: InboundAttachment[] = [];
    const chat = interaction.channel?.id ? `discord:${interaction.channel.id}` : undefined;
    if (interaction.type === (InteractionType.APPLICATION_COMMAND as number)) {
      const command = interaction as APIChatInputApplicationCommandInteraction;
      if (command.data.name === AIRLOCK_COMMAND.name) {
        const reply = (text: string) => interactionReply(text, EPHEMERAL);
        return { response: reply(""), reply, chat, asksChatId: true, attachments, refused: [] };
      }
      for (const option of command.data.options ?? []) {
        if (option.type !== OPTION_ATTACHMENT) continue;
        const attachment = command.data.resolved?.attachments?.[String(option.value)];
        if (!attachment || typeof attachment.url !== "string") continue;
        const size = attachment.size;
        attachments.push({
          name: cleanFileName(String(attachment.filename ?? ""), "attachment"),
          size: Number.isSafeInteger(size) && size >= 0 ? size : null,
          contentType: attachment.content_type,
          ref: { url: attachment.url },
        });
      }
    }
    const respond = (refused: Refusal[]) => interactionReply(replyText(attachments, refused));
    return {
      response: respond([]),
      respond,
      chat,
      eventKey: `discord:${interaction.id}`,
      attachments,
      refused: [],
    };
  }

  fetchAttachment(
    ref: InboundAttachment["ref"],
  ): Promise<{ body: ReadableStream<Uint8Array>; size: number }> {
    return fetchFromAllowedHost(String(ref.url), this.config.attachmentHosts);
  }

  private async post(path: string, body: BodyInit, contentType: string): Promise<APIMessage> {
    const response = await fetch(`${this.config.apiBase.replace(/\/$/, "")}${path}`, {
      method: "POST",
      headers: { authorization: `Bot ${this.config.botToken}`, "content-type": contentType },
      body,
    });
    const text = await response.text();
    if (response.ok) return JSON.parse(text) as APIMessage;
    let reason = text.slice(0, 300);
    let retryAfter: number | undefined;
    try {
      const error = JSON.parse(text) as { message?: string; code?: number; retry_after?: number };
      reason = error.message ?? reason;
      retryAfter = error.retry_after;
    } catch {
      // not JSON: keep the text
    }
    retryAfter ??= Number(response.headers.get("retry-after")) || undefined;
    throw new PlatformError("discord", response.status, reason, retryAfter);
  }
}

/** An interaction's answer: a message in the channel (only the asker sees an ephemeral one). */
function interactionReply(content: string, flags?: number): Response {
  return Response.json({
    type: InteractionResponseType.CHANNEL_MESSAGE_WITH_SOURCE,
    data: { content, allowed_mentions: { parse: [] }, ...(flags ? { flags } : {}) },
  });
}

/** The interaction's answer: what was received, and what was refused and why. */
function replyText(attachments: InboundAttachment[], refused: Refusal[]): string {
  if (attachments.length === 0) return "Attach a file to this command to send it to the agent.";
  const taken = attachments.filter((a) => !refused.some((r) => r.name === a.name));
  const lines = refused.map((r) => `Could not take ${discordLiteral(r.name)}: ${r.reason}.`);
  if (taken.length > 0) {
    const names = taken.map((a) => discordLiteral(a.name)).join(", ");
    lines.unshift(`Received ${names}: it will be in the agent's inbox shortly.`);
  }
  return lines.join("\n");
}
