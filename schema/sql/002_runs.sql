-- Runs: one job observed by `gpufault run` (command, environment, exit, captured output).
CREATE TABLE runs (
    id          INTEGER PRIMARY KEY,
    command     TEXT NOT NULL,  -- JSON array: argv
    cwd         TEXT,
    host        TEXT,
    boot_id     TEXT,
    started     TEXT NOT NULL,  -- UTC, ISO 8601 with microseconds
    ended       TEXT,
    exit_status INTEGER,        -- exit code; NULL when killed by a signal
    signal      INTEGER,        -- the signal that ended it
    pid         INTEGER,        -- the job's pid
    pids        TEXT,           -- JSON array: the job and the descendants seen while it ran
    env         TEXT,           -- JSON object: GPU-relevant variables, secrets redacted
    spool       TEXT,           -- the captured stdout+stderr
    source_id   INTEGER REFERENCES sources(id)
);
