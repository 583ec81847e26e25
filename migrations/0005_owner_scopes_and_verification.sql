-- A hash is not a key: dedup is limited to an owner scope. A session's scope is its own id,
-- or "owner:<name>" when the operator minted it with an `owner` (that user's sandboxes
-- share dedup). Files carry their session's scope so the dedup look-up is one indexed read.
ALTER TABLE sessions ADD COLUMN owner TEXT;

-- A session's scope follows from its row (src/db/sessions.ts `SESSION_SCOPE_SQL`); sessions
-- minted before owners existed have none, so their files' scope is their session.
ALTER TABLE files ADD COLUMN scope TEXT;
UPDATE files SET scope = session_id WHERE scope IS NULL;
CREATE INDEX files_by_scope_sha256 ON files (scope, sha256);

-- Files still waiting for the verification queue, oldest first (the sweep re-enqueues
-- any a lost message or a killed consumer left behind).
CREATE INDEX files_pending ON files (created_at) WHERE verified = 0 AND deleted_at IS NULL;
