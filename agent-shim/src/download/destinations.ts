/**
 * A chat a file can be delivered to, as `send --to` and the `send_file` tool's `to` take it; the
 * relay checks the same shapes. Its `source` is also the tools' JSON Schema `pattern`.
 */
export const DESTINATION = /^(telegram:-?\d+|discord:\d+|slack:[A-Z0-9]+|whatsapp:\d+)$/;

/** The shapes of `DESTINATION`, in words. */
export const DESTINATION_SHAPES =
  "telegram:<chatId>, discord:<channelId>, slack:<channelId> or whatsapp:<wa_id>";
