-- A one-request upload may carry an Idempotency-Key: a retry whose first answer was lost gets
-- the file the first attempt made instead of a second one. Keys are per session; files
-- without one leave it NULL (a unique index allows any number of NULLs).
ALTER TABLE files ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX files_by_idempotency_key ON files (session_id, idempotency_key);
