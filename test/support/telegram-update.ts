/** A Telegram update carrying `message` in the private chat `chat`, as Telegram posts it. */
export function telegramUpdate(updateId: number, chat: string, message: object) {
  return {
    update_id: updateId,
    message: { message_id: 1, date: 0, chat: { id: Number(chat), type: "private" }, ...message },
  };
}

/** Posts an update to the relay's Telegram webhook with the given secret header. */
export function postTelegramUpdate(
  relayUrl: string,
  secret: string,
  update: object,
): Promise<Response> {
  return fetch(`${relayUrl}/webhooks/telegram`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret },
    body: JSON.stringify(update),
  });
}
