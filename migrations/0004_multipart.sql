-- Multipart uploads (files above the shim's threshold go up in parts). A single-PUT upload
-- leaves these NULL.
ALTER TABLE uploads ADD COLUMN part_size INTEGER;      -- bytes per part (the last may be shorter)
ALTER TABLE uploads ADD COLUMN part_sha256 TEXT;       -- the declared hex SHA-256 of each part, concatenated
ALTER TABLE uploads ADD COLUMN store_upload_id TEXT;   -- the store's own multipart upload id

-- Parts stored so far, for stores that cannot list them (the R2 binding has no ListParts).
-- A part is recorded only after the relay hashed it on the way in and it matched.
CREATE TABLE upload_parts (
  upload_id TEXT NOT NULL,
  part_number INTEGER NOT NULL,
  size INTEGER NOT NULL,
  etag TEXT NOT NULL,
  uploaded_at INTEGER NOT NULL,
  PRIMARY KEY (upload_id, part_number)
);
