import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { AppError } from "../errors";
import { logEvent, since } from "../log";
import type { PlatformName } from "../platforms";
import { receiveAttachments } from "../services/inbox";

const PLATFORMS: readonly PlatformName[] = ["telegram", "discord", "slack"];

/**
 * Platform webhooks: the signature is verified over the raw body before anything is
 * parsed or stored; attachments are fetched in the background after the answer.
 */
export const webhooks = new Hono<AppEnv>().post("/:platform", async (c) => {
  const { deps } = c.var;
  const name = c.req.param("platform") as PlatformName;
  const platform = PLATFORMS.includes(name) ? deps.platforms[name] : undefined;
  if (!platform) throw new AppError("not_found", `no webhook for ${name} on this relay`);
  const started = Date.now();
  const rawBody = await c.req.text();
  try {
    await platform.verifyWebhook(c.req.raw, rawBody, deps.now());
  } catch (error) {
    logEvent("webhook_refused", { platform: name, reason: String(error) }, "warn");
    throw error;
  }
  let event;
  try {
    event = await platform.parseWebhook(rawBody);
  } catch {
    throw new AppError("invalid_json", "webhook body is not a valid event");
  }
  await receiveAttachments(deps, platform, event);
  logEvent("webhook", {
    platform: name,
    chat: event.chat,
    eventKey: event.eventKey,
    attachments: event.attachments.length,
    refused: event.refused.length,
    durationMs: since(started),
  });
  return event.response;
});
