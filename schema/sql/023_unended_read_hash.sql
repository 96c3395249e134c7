-- What a reader that stored rows from an unended end (022) read (hostile review 17, i2 H1).
-- The next reader replaces the rows after `line` with what the file holds there now: right
-- when the file only grew, wrong when it was cut or rewritten past the checkpoint since (the
-- stored records were deleted for whatever the file held then). `read_hash` is the prefix
-- hash of bytes [0, size) (files up to 64 MiB): a file now shorter than `size`, or whose bytes
-- there hash otherwise, is not the one read (ingest/source_identity.cpp, checkPrefix).
ALTER TABLE sources ADD COLUMN read_hash INTEGER;
