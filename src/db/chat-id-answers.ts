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
