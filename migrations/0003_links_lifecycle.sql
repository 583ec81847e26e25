-- Share links minted with limits (POST /v1/files/:id/links). The link id is carried in the
-- share token and covered by its HMAC; tokens without one (the FileRecord's `url`) need no row.
CREATE TABLE links (
  id TEXT PRIMARY KEY,                    -- lnk_…
  file_id TEXT NOT NULL REFERENCES files (id),
  created_at INTEGER NOT NULL,            -- unix ms
  expires_at INTEGER NOT NULL,            -- unix ms, never past the file's expiry at creation
  max_downloads INTEGER,                  -- NULL: unlimited
  downloads INTEGER NOT NULL DEFAULT 0    -- counted downloads (see docs/api.md)
);
CREATE INDEX links_by_file ON links (file_id);
CREATE INDEX links_by_expiry ON links (expires_at);

-- The scheduled sweep finds expired blobs and stale pending uploads by time.
CREATE INDEX blobs_by_expiry ON blobs (expires_at);
CREATE INDEX uploads_by_status_expiry ON uploads (status, expires_at);
CREATE INDEX files_by_sha256 ON files (sha256);
