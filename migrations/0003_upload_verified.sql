-- Set when the relay checked an upload's original size and SHA-256 while receiving it
-- (gzip uploads through the relay), so completing it needs no second read.
ALTER TABLE uploads ADD COLUMN verified INTEGER NOT NULL DEFAULT 0;
