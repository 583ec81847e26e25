-- Upload links (`airlock request`): a session asks a person for one file through `/u/<token>`.
-- The token itself is never stored, only its SHA-256, so a read of this table grants nothing.
CREATE TABLE upload_requests (
  id TEXT PRIMARY KEY,                    -- req_…, the agent's handle (GET /v1/requests/:id)
  session_id TEXT NOT NULL REFERENCES sessions (id),
  token_sha256 TEXT NOT NULL UNIQUE,      -- hex SHA-256 of the link's token
  name TEXT,                              -- the hint shown to the person; NULL: none given
  max_bytes INTEGER NOT NULL,             -- the largest file the link takes
  created_at INTEGER NOT NULL,            -- unix ms
  expires_at INTEGER NOT NULL,            -- unix ms, never past the session's expiry
  upload_id TEXT,                         -- the upload that holds the link (a browser's multipart
                                          -- upload, or "put_…" for a plain PUT); a newer one replaces it
  file_id TEXT REFERENCES files (id),     -- the file that used the link up (it may still be verifying)
  received_at INTEGER                     -- unix ms when the file was verified and put in the inbox
);
CREATE INDEX upload_requests_by_session ON upload_requests (session_id, created_at);
-- The verify queue settles the request of a file it has just verified.
CREATE INDEX upload_requests_by_file ON upload_requests (file_id) WHERE file_id IS NOT NULL;
