-- A chat platform's handle for content it already holds (Telegram file_id, WhatsApp media id),
-- so the same content goes to another chat without its bytes. Handles are kept per bot or
-- phone number (`account`), per media kind (a photo's file_id is not a document's), per owner
-- scope (like dedup, a session never learns what another scope sent) and, where the handle
-- carries the file's name (Telegram documents), per name.
CREATE TABLE platform_handles (
  platform TEXT NOT NULL,
  account TEXT NOT NULL,
  kind TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  scope TEXT NOT NULL,
  name TEXT NOT NULL,                     -- '' where the handle carries no name
  handle TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,                     -- NULL: the platform names no expiry
  PRIMARY KEY (platform, account, kind, sha256, scope, name)
);

-- Bytes of the file a delivery sent to the platform: 0 for a link or a re-send by handle.
ALTER TABLE deliveries ADD COLUMN uploaded_bytes INTEGER NOT NULL DEFAULT 0;
