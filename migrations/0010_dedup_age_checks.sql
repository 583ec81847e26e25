-- A dedup hit keeps using an object whose age the bucket's rule counts from its last write.
-- The hourly sweep checks each dedup hit's object once (oldest first) and marks it checked.
ALTER TABLE files ADD COLUMN age_checked INTEGER NOT NULL DEFAULT 0;
CREATE INDEX files_dedup_age_unchecked ON files (created_at) WHERE deduped = 1 AND age_checked = 0;
