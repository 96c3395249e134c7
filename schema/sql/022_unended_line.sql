-- A file's last line without its newline (issue 3, "gpufault ingest beside the daemon").
-- `gpufault ingest FILE` stores the records of a last line that has no newline yet (a finished
-- job's log ends so), but its checkpoint is that line's start: `unended` = 1 says the rows of
-- the lines after `line` were stored from such a line. A later reader of the source (gpufaultd
-- following the file, another ingest once the file grew) reads that line again from its start
-- and, before it stores the first line it reads there, deletes them (Store::dropLinesFrom): the
-- line is stored once, whole, under its number, and the lines after it keep theirs.
ALTER TABLE sources ADD COLUMN unended INTEGER NOT NULL DEFAULT 0;
