-- Bytes lost to a file stream (issue 3): what gpufaultd saw and had not read when it was removed
-- (a truncation, a deletion, a file gone or truncated while the daemon was down), less what a
-- copy (copytruncate) gave back when it continued the stream. Added in the transaction that
-- finishes the stream (or resumes it in a copy), so a kill neither loses nor repeats a count:
-- the sum over a store is what its daemons reported lost, across restarts.
ALTER TABLE sources ADD COLUMN lost_bytes INTEGER NOT NULL DEFAULT 0;
