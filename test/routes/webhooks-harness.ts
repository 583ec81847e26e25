import { env } from "cloudflare:test";
import { discordKeys } from "../support/webhook-signing";
import { RelayClient } from "../support/relay-client";

export const SLACK_SECRET = "slack-signing-secret-for-tests";
export const WHATSAPP_SECRET = "whatsapp-app-secret-for-tests";

/** A client for a relay with every platform configured, its APIs pointing nowhere. */
export async function webhookClient() {
  const discord = await discordKeys();
  const client = new RelayClient({
    ...env,
    TELEGRAM_BOT_TOKEN: "123:telegram-test-token",
    TELEGRAM_WEBHOOK_SECRET: "telegram-webhook-secret",
    TELEGRAM_API_ROOT: "http://127.0.0.1:9",
    DISCORD_BOT_TOKEN: "discord-test-token",
    DISCORD_PUBLIC_KEY: discord.publicKeyHex,
    DISCORD_API_BASE: "http://127.0.0.1:9/api/v10",
    SLACK_BOT_TOKEN: "xoxb-test",
    SLACK_SIGNING_SECRET: SLACK_SECRET,
    SLACK_API_URL: "http://127.0.0.1:9/api/",
    WHATSAPP_ACCESS_TOKEN: "whatsapp-test-token",
    WHATSAPP_PHONE_NUMBER_ID: "106540352242922",
    WHATSAPP_APP_SECRET: WHATSAPP_SECRET,
    WHATSAPP_VERIFY_TOKEN: "whatsapp-verify-token",
    WHATSAPP_API_BASE: "http://127.0.0.1:9/v23.0",
  });
  return { client, discord };
}

/** How many inbox rows the relay holds: a refused webhook adds none. */
export async function inboxCount(): Promise<number> {
  return (await env.DB.prepare("SELECT COUNT(*) AS n FROM inbox").first<{ n: number }>())?.n ?? 0;
}
