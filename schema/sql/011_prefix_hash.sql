-- copytruncate across restarts (issue 3): with a file source's checkpoint, a hash of the file's
-- bytes [0, offset) (the daemon's PrefixHasher, its 64 bits as a signed integer; NULL: not
-- known). A new file whose first line has a source's fingerprint and whose bytes before that
-- source's offset hash to this value is a copy of it (logrotate's copytruncate) and continues
-- it, and a file found again by device + inode + fingerprint whose bytes differ is not the file
-- the checkpoint was written for (its inode was reused, or it was truncated and written again).
-- `earlier`: the checkpoints committed before this one ("offset line hash" with the hash in
-- hex, separated by ";", newest first, a few): a copy made before its original was read further
-- (and the resume undone by a kill) is smaller than the checkpoint and matches one of them.
ALTER TABLE sources ADD COLUMN prefix_hash INTEGER;
ALTER TABLE sources ADD COLUMN earlier TEXT;
