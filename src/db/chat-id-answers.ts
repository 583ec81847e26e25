/**
 * Counts one more `/airlock` answer in `chat` and returns how many the chat has had in its
 * current window, this one included. A window older than `windowMs` starts afresh. One
 * statement, so two asks at once are both counted.
 */
export async function countChatIdAnswer(
  db: D1Database,
  chat: string,
  now: number,
  windowMs: number,
): Promise<number> {
  const row = await db
    .prepare(
      `INSERT INTO chat_id_answers (chat, window_start, answers) VALUES (?1, ?2, 1)
       ON CONFLICT (chat) DO UPDATE SET
         answers = CASE WHEN window_start <= ?2 - ?3 THEN 1 ELSE answers + 1 END,
         window_start = CASE WHEN window_start <= ?2 - ?3 THEN ?2 ELSE window_start END
       RETURNING answers`,
    )
    .bind(chat, now, windowMs)
    .first<{ answers: number }>();
  return row?.answers ?? 1;
}

/**
 * Deletes up to `limit` chats' counts whose window began at or before `windowStartedBy`: once a
 * window has ended the next ask starts a fresh one anyway (see `countChatIdAnswer`), so such a
 * row limits nothing. An ask that restarted the window meanwhile moved `window_start` past the
 * cut-off, so its row stays. Returns how many rows went.
 */
export async function deleteEndedChatIdWindows(
  db: D1Database,
  windowStartedBy: number,
  limit: number,
): Promise<number> {
  const result = await db
    .prepare(
      `DELETE FROM chat_id_answers WHERE chat IN
         (SELECT chat FROM chat_id_answers WHERE window_start <= ?1 LIMIT ?2)
       AND window_start <= ?1`,
    )
    .bind(windowStartedBy, limit)
    .run();
  return result.meta.changes;
}
