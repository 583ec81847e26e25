-- Every delivery of a file to a chat, successful or not.
CREATE TABLE deliveries (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id),
  file_id TEXT NOT NULL REFERENCES files (id),
  destination TEXT NOT NULL,              -- "platform:id"
  mode TEXT NOT NULL CHECK (mode IN ('native', 'link')),
  method TEXT NOT NULL,                   -- e.g. sendPhoto, files.completeUploadExternal, link
  status TEXT NOT NULL CHECK (status IN ('sending', 'delivered', 'failed')),
  platform_message_id TEXT,
  error TEXT,
  idempotency_key TEXT,
  created_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE UNIQUE INDEX deliveries_by_idempotency_key ON deliveries (session_id, idempotency_key);
CREATE INDEX deliveries_by_file ON deliveries (file_id);

-- Files waiting for a sandbox: attachments people sent in a chat, or files the operator seeded.
CREATE TABLE inbox (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id),
  source TEXT NOT NULL,                   -- "telegram:<chatId>", "operator", ...
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('fetching', 'ready', 'failed', 'acked')),
  attachment TEXT,                        -- JSON reference to fetch from the platform
  file_id TEXT REFERENCES files (id),
  attempts INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  event_key TEXT,                         -- platform event id, so a redelivered webhook is stored once
  created_at INTEGER NOT NULL,
  acked_at INTEGER
);
CREATE INDEX inbox_by_session ON inbox (session_id, status, created_at);
CREATE UNIQUE INDEX inbox_by_event ON inbox (event_key);
