-- A gzip upload may be stored as independent gzip members, each covering a fixed span of the
-- original bytes (docs/api.md, "The gzip member table"). The upload keeps the table its
-- declare carried (unverified: member_span NULL means none was declared); once the relay
-- has inflated every member to its span, the table is recorded for the stored object, so
-- that a read inflates only the members it touches. The sizes are comma-separated decimals.
ALTER TABLE uploads ADD COLUMN member_span INTEGER;
ALTER TABLE uploads ADD COLUMN member_sizes TEXT;

-- Verified tables, one per stored object: a key names its stored bytes, and a member's end
-- is fixed by those bytes, so every file on the key shares the table. No row: untabled.
CREATE TABLE gzip_members (
  stored_key TEXT PRIMARY KEY,
  span INTEGER NOT NULL,
  stored_sizes TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
