import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { AppError } from "../errors";
import { readCappedText } from "../http/json-body";
import { logEvent, since } from "../log";
import type { PlatformName } from "../platforms";
import { answerChatId } from "../services/chat-id";
import { receiveAttachments } from "../services/inbox/inbox";

const PLATFORMS: readonly PlatformName[] = ["telegram", "discord", "slack", "whatsapp"];

/** The platforms' webhook payloads are a few KB; a body past this is nobody's event. */
export const MAX_WEBHOOK_BODY_BYTES = 1024 * 1024;

/**
 * Platform webhooks: the request is authenticated before its body is parsed (Telegram's
 * secret header before the body is even read; Slack's and Discord's signatures over the raw
 * body, read up to a 1 MiB cap; WhatsApp's `X-Hub-Signature-256` likewise), then attachments are fetched in the background after the answer.
 */
export const webhooks = new Hono<AppEnv>()
  /** A subscription handshake (WhatsApp): answered only by platforms that have one. */
  .get("/:platform", async (c) => {
    const name = c.req.param("platform") as PlatformName;
    const platform = PLATFORMS.includes(name) ? c.var.deps.platforms[name] : undefined;
    if (!platform?.answerSubscription)
      throw new AppError("not_found", `no webhook for ${name} on this relay`);
    try {
      return await platform.answerSubscription(new URL(c.req.url).searchParams);
    } catch (error) {
      logEvent("webhook_subscription_refused", { platform: name }, "warn");
      throw error;
    }
  })
  .post("/:platform", async (c) => {
    const { deps } = c.var;
    const name = c.req.param("platform") as PlatformName;
    const platform = PLATFORMS.includes(name) ? deps.platforms[name] : undefined;
    if (!platform) throw new AppError("not_found", `no webhook for ${name} on this relay`);
    const started = Date.now();
    let body: Promise<string> | undefined;
    const rawBody = () => (body ??= readCappedText(c, MAX_WEBHOOK_BODY_BYTES));
    try {
      await platform.verifyWebhook(c.req.raw, rawBody, deps.now());
    } catch (error) {
      logEvent("webhook_refused", { platform: name, reason: String(error) }, "warn");
      throw error;
    }
    const text = await rawBody();
    let event;
    try {
      event = await platform.parseWebhook(text);
    } catch {
      throw new AppError("invalid_json", "webhook body is not a valid event");
    }
    // `/airlock` asks for the chat's destination id: answered, nothing stored.
    const refused = event.asksChatId ? [] : await receiveAttachments(deps, platform, event);
    // Further events in the same webhook (WhatsApp batches messages from several people).
    for (const more of event.more ?? []) {
      if (more.asksChatId) await answerChatId(deps, platform, more);
      else await receiveAttachments(deps, platform, more);
    }
    logEvent("webhook", {
      platform: name,
      chat: event.chat,
      eventKey: event.eventKey,
      attachments: event.attachments.length,
      more: event.more?.length ?? 0,
      refused: refused.length,
      durationMs: since(started),
    });
    if (event.asksChatId) return answerChatId(deps, platform, event);
    return event.respond ? event.respond(refused) : event.response;
  });
