-- How often the relay answered `/airlock` (a chat's destination id) in each chat: a fixed
-- window per chat (`window_start`, ms) and the answers given in it, so a chat that asks
-- again and again gets only a few answers (src/services/chat-id.ts names the limit).
CREATE TABLE chat_id_answers (
  chat TEXT PRIMARY KEY,                  -- platform:id, as the destination id
  window_start INTEGER NOT NULL,
  answers INTEGER NOT NULL
);
