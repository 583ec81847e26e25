-- Upload links share the session's quota without starving it (issue 24 §2), and a delivery cut
-- by a crash no longer stays `sending` forever (§3).

-- The upload link an upload came through (NULL: the sandbox's own). A link upload's bytes are
-- only promised by a stranger: while pending they hold room against other links, never against
-- the sandbox's own sends; they count for the sandbox once every byte has arrived (`complete`).
ALTER TABLE uploads ADD COLUMN request_id TEXT;

-- unix ms when the sandbox cancelled the link (`DELETE /v1/requests/:id`); NULL while it stands.
ALTER TABLE upload_requests ADD COLUMN cancelled_at INTEGER;

-- unix ms until which the attempt `sending` a delivery holds it; renewed while it sends. Once it
-- lapses a retry with the same Idempotency-Key takes the delivery over, and the sweep settles it
-- as failed. NULL on rows from before this migration: lapsed.
ALTER TABLE deliveries ADD COLUMN lease_until INTEGER;
-- The sweep finds deliveries left `sending` by an attempt that stopped renewing its lease.
CREATE INDEX deliveries_sending ON deliveries (lease_until) WHERE status = 'sending';
