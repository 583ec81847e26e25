-- Where each file came from, so an operator can tell a sandbox's outputs from its inputs:
-- 'sandbox' (uploads and one-request uploads), 'seed' (the operator's POST /v1/inbox),
-- 'chat:<platform>' (an attachment a person sent in a chat), 'upload-link' (a person's upload
-- through an `airlock request` link). GET /v1/files?origin=… filters by it.
ALTER TABLE files ADD COLUMN origin TEXT NOT NULL DEFAULT 'sandbox';

-- Existing files: from the inbox item or upload link that brought them in, else 'sandbox'.
UPDATE files SET origin = 'upload-link'
  WHERE id IN (SELECT file_id FROM upload_requests WHERE file_id IS NOT NULL);
UPDATE files SET origin = (
    SELECT CASE
      WHEN i.source = 'operator' THEN 'seed'
      WHEN i.source LIKE 'upload-link:%' THEN 'upload-link'
      WHEN instr(i.source, ':') > 0 THEN 'chat:' || substr(i.source, 1, instr(i.source, ':') - 1)
      ELSE 'sandbox'
    END
    FROM inbox i WHERE i.file_id = files.id ORDER BY i.created_at LIMIT 1)
  WHERE origin = 'sandbox' AND id IN (SELECT file_id FROM inbox WHERE file_id IS NOT NULL);

CREATE INDEX files_by_session_origin ON files (session_id, origin, created_at);
