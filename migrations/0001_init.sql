-- Sessions minted by the operator. Revocation lives here so a revoked token stops at once.
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  destinations TEXT NOT NULL DEFAULT '[]', -- JSON array of "platform:id"
  quota_bytes INTEGER NOT NULL,
  created_at INTEGER NOT NULL,            -- unix ms
  expires_at INTEGER NOT NULL,            -- unix ms
  revoked_at INTEGER                      -- unix ms, NULL while live
);

-- Verified content: one row per original-bytes SHA-256. A row exists only after the
-- stored bytes were verified (by the store's signed checksum and, for gzip, by the relay).
CREATE TABLE blobs (
  sha256 TEXT PRIMARY KEY,                -- hex SHA-256 of the original bytes
  size INTEGER NOT NULL,                  -- original size
  encoding TEXT NOT NULL CHECK (encoding IN ('identity', 'gzip')),
  stored_key TEXT NOT NULL,               -- object key, derived from stored_sha256
  stored_size INTEGER NOT NULL,
  stored_sha256 TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL             -- never earlier than any live file using it
);
CREATE INDEX blobs_by_stored_key ON blobs (stored_key);

-- Declared uploads: what a sandbox promised to PUT, until completed or abandoned.
CREATE TABLE uploads (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id),
  name TEXT NOT NULL,
  size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  content_type TEXT NOT NULL,
  encoding TEXT NOT NULL CHECK (encoding IN ('identity', 'gzip')),
  stored_key TEXT NOT NULL,
  stored_size INTEGER NOT NULL,
  stored_sha256 TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'rejected')),
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,            -- the upload URL's expiry; quota is held until then
  file_id TEXT
);
CREATE INDEX uploads_by_session ON uploads (session_id, status);
CREATE INDEX uploads_by_stored_key ON uploads (stored_key, status);

-- Files as users see them: a name and a lifetime over stored bytes. A file knows where
-- its bytes are; it is `verified` once its original size and SHA-256 are known to be
-- right (always for identity and deduped files; for gzip uploads once the relay has
-- inflated them), and only verified content ever becomes a blob, i.e. a dedup target.
CREATE TABLE files (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id),
  name TEXT NOT NULL,
  size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  content_type TEXT NOT NULL,
  encoding TEXT NOT NULL CHECK (encoding IN ('identity', 'gzip')),
  stored_key TEXT NOT NULL,
  verified INTEGER NOT NULL DEFAULT 1,
  deduped INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  deleted_at INTEGER
);
CREATE INDEX files_by_session ON files (session_id, created_at);
CREATE INDEX files_by_stored_key ON files (stored_key);
