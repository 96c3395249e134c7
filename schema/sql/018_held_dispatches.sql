-- Dispatches a stream's context windows still hold (ingest/store_sink.h) that lie before the
-- line a resumed stream reads again from (issue 3): a thread that went idle keeps its last
-- dispatches far behind the lines the checkpoint can re-read (the remembered line positions).
-- Written in the transaction of the checkpoint that passes them, updated when one is stored
-- as a dispatch row, deleted when its window drops it; a resumed stream loads them into its
-- windows before it reads again, so it stores what an uninterrupted one stores.
CREATE TABLE held_dispatches (
    source_id    INTEGER NOT NULL REFERENCES sources(id),
    line         INTEGER NOT NULL,  -- the dispatch's line (dispatches.line)
    context_line INTEGER NOT NULL,  -- its first line (the first ArgN line, else `line`)
    runtime_us   INTEGER,           -- AMD_LOG_LEVEL stamp, microseconds
    pid          INTEGER,
    runtime_tid  TEXT NOT NULL,
    kernel       TEXT NOT NULL,     -- as printed (mangled)
    -- its pointer arguments, one a line: `index ptr lo hi name` (decimal; `-` for an unknown
    -- lo/hi; the name, possibly empty, is the rest of the line)
    args         TEXT NOT NULL,
    stored       INTEGER NOT NULL,  -- 1: its dispatch row (and operands) is stored already
    PRIMARY KEY (source_id, line)
) WITHOUT ROWID;
