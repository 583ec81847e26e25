-- Share links are metered in bytes: a link with max_downloads n may send n × the file's size
-- (at least 1 per request for an empty file) in total, whatever the requests look like
-- (whole GETs, ranges at any offset, inline previews). Each request reserves its bytes here
-- in one conditional UPDATE before it streams, and gives back what it never sent.
ALTER TABLE links ADD COLUMN bytes_served INTEGER NOT NULL DEFAULT 0;
-- Bytes given back for a transfer cut short that were already sent (they may have been lost
-- in flight): capped per link, so a resume fits but dropping connections buys little.
ALTER TABLE links ADD COLUMN bytes_forgiven INTEGER NOT NULL DEFAULT 0;
-- Downloads counted before this migration keep counting; `downloads` is no longer written.
UPDATE links SET bytes_served = downloads * MAX(1, (SELECT size FROM files WHERE files.id = links.file_id))
  WHERE downloads > 0;

-- What a tar archive holds, read once (bounded) when its file is verified and shown by the
-- share page without touching the bytes again. Keyed by the stored object, so files that
-- share content (dedup) share the listing.
CREATE TABLE archive_listings (
  stored_key TEXT PRIMARY KEY,
  entries TEXT,                           -- JSON array of {name, size, type, linkTarget?}; NULL: not a tar
  stopped TEXT CHECK (stopped IN ('entries', 'bytes', 'corrupt')), -- why listing stopped early
  created_at INTEGER NOT NULL             -- unix ms
);
