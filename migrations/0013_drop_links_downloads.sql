-- links.downloads was replaced by bytes_served in 0006 and has not been written since.
ALTER TABLE links DROP COLUMN downloads;
