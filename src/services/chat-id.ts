import { countChatIdAnswer } from "../db/chat-id-answers";
import type { Deps } from "../deps";
import { logEvent } from "../log";
import { parseDestination, type Platform } from "../platforms";
import type { WebhookEvent } from "../platforms/platform";

/**
 * `/airlock` answers per chat: at most `answers` in any `windowMs` (a fixed window that starts
 * with the first ask). Past it, Telegram and WhatsApp chats get no message; Discord and Slack,
 * which answer in the webhook's own response, get `TOO_OFTEN`.
 */
export const CHAT_ID_LIMIT = { answers: 3, windowMs: 10 * 60_000 } as const;

export const TOO_OFTEN = "This chat asked for its Airlock id too often; try again in ten minutes.";

/** The whole answer: the chat's destination id and the one line that binds a session to it. */
export function chatIdText(chat: string): string {
  return (
    `This chat's Airlock destination id: ${chat}\n` +
    `To bind a session to it: POST /v1/sessions {"destinations":["${chat}"]}`
  );
}

/**
 * Answers a verified `/airlock` in the chat it came from, within the limit: in the webhook's
 * response where the platform takes one (`event.reply`), else as a message posted in the
 * background. Nothing about sessions or files is read, and nothing from the event is stored.
 */
export async function answerChatId(
  deps: Deps,
  platform: Platform,
  event: WebhookEvent,
): Promise<Response> {
  const chat = event.chat;
  const target = chat ? parseDestination(chat)?.target : undefined;
  if (!chat || !target) return event.response;
  const count = await countChatIdAnswer(deps.db, chat, deps.now(), CHAT_ID_LIMIT.windowMs);
  const allowed = count <= CHAT_ID_LIMIT.answers;
  logEvent("chat_id_asked", { chat, answered: allowed }, allowed ? "info" : "warn");
  if (event.reply) return event.reply(allowed ? chatIdText(chat) : TOO_OFTEN);
  if (allowed) {
    deps.waitUntil(
      platform
        .sendText(target, chatIdText(chat))
        .then(() => undefined)
        .catch((error: unknown) =>
          logEvent("chat_id_answer_failed", { chat, error: String(error) }, "error"),
        ),
    );
  }
  return event.response;
}
