import { Api, GrammyError, HttpError } from "grammy";
import { callRelay, relayRefusal, SetupError, type Report, type Settings } from "./setup";

/** The updates the relay reads: messages (attachments, `/airlock`) in chats and channels. */
const ALLOWED_UPDATES = ["message", "channel_post"] as const;

/**
 * Telegram: checks the bot token (`getMe`) and that the relay takes the webhook secret, then
 * `setWebhook` (secret token, allowed updates), `setMyCommands` (/airlock), and reads it all
 * back with `getWebhookInfo`.
 */
export async function setUpTelegram(
  relay: string,
  settings: Settings,
  report: Report,
): Promise<void> {
  const token = settings.need("TELEGRAM_BOT_TOKEN", "the bot's token from @BotFather");
  const secret = settings.need("TELEGRAM_WEBHOOK_SECRET", "any random string the relay checks");
  if (!/^[A-Za-z0-9_-]{1,256}$/.test(secret))
    throw new SetupError("TELEGRAM_WEBHOOK_SECRET must be 1-256 characters of A-Z a-z 0-9 _ -");
  const apiRoot = settings.get("TELEGRAM_API_ROOT") ?? "https://api.telegram.org";
  const api = new Api(token, { apiRoot });
  const call = <T>(what: string, request: () => Promise<T>) => telegramCall(what, request, apiRoot);

  const me = await call("getMe", () => api.getMe());
  report.done(`bot token works: @${me.username} (id ${me.id})`);

  const webhook = `${relay}/webhooks/telegram`;
  // An update without a message: the relay checks the secret and stores nothing.
  const probe = await callRelay(webhook, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret },
    body: JSON.stringify({ update_id: 0 }),
  });
  if (probe.status === 401)
    throw new SetupError(
      `the relay refused the webhook secret: TELEGRAM_WEBHOOK_SECRET differs from the relay's`,
    );
  if (!probe.ok) throw relayRefusal("Telegram", webhook, probe.status, "TELEGRAM_BOT_TOKEN");
  report.done(`relay takes the webhook secret at ${webhook}`);

  await call("setWebhook", () =>
    api.setWebhook(webhook, { secret_token: secret, allowed_updates: [...ALLOWED_UPDATES] }),
  );
  report.done(
    `setWebhook: ${webhook} with the secret token, allowed_updates ${ALLOWED_UPDATES.join(", ")}`,
  );

  await call("setMyCommands", () =>
    api.setMyCommands([
      { command: "airlock", description: "Show this chat's Airlock destination id" },
    ]),
  );
  report.done("setMyCommands: /airlock in the bot's command menu");

  const info = await call("getWebhookInfo", () => api.getWebhookInfo());
  if (info.url !== webhook)
    throw new SetupError(
      `getWebhookInfo shows the webhook at ${info.url || "(none)"}, not ${webhook}`,
    );
  report.done(`getWebhookInfo: webhook set, ${info.pending_update_count} pending update(s)`);
  if (info.last_error_message) {
    const at = info.last_error_date
      ? new Date(info.last_error_date * 1000).toISOString()
      : "unknown time";
    report.warn(
      `Telegram's last delivery to a webhook of this bot failed (${at}): ${info.last_error_message}`,
    );
  }
  report.leave(
    "Add the bot to a chat (or open a chat with it) and type /airlock: it answers with the chat's destination id.",
  );
  report.leave('Bind a session to that id: POST /v1/sessions {"destinations":["telegram:<id>"]}.');
}

/** A Bot API call; a refusal is one line naming what to fix. */
async function telegramCall<T>(
  what: string,
  request: () => Promise<T>,
  apiRoot: string,
): Promise<T> {
  try {
    return await request();
  } catch (error) {
    if (error instanceof GrammyError) {
      if (error.error_code === 401 || error.error_code === 404)
        throw new SetupError(
          `Telegram refused TELEGRAM_BOT_TOKEN (${what}: ${error.error_code} ${error.description})`,
        );
      throw new SetupError(`Telegram refused ${what}: ${error.error_code} ${error.description}`);
    }
    if (error instanceof HttpError)
      throw new SetupError(`could not reach Telegram at ${apiRoot} (${what}): ${error.message}`);
    throw error;
  }
}
