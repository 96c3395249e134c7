-- Processes: what /proc said about a process named by a fault record while it still lived
-- (gpufaultd). NSpid joins a container's pids (runtime logs) to the host's (kernel log).
CREATE TABLE processes (
    id          INTEGER PRIMARY KEY,
    pid         INTEGER NOT NULL,  -- host pid (as the kernel log prints it)
    boot_id     TEXT,
    taken_at    TEXT NOT NULL,     -- UTC, ISO 8601
    start_ticks INTEGER,           -- /proc/PID/stat starttime: tells a reused pid apart
    name        TEXT,
    ppid        INTEGER,
    uid         INTEGER,
    nspid       TEXT,              -- JSON array, outermost namespace first
    cgroup      TEXT,
    cmdline     TEXT,              -- JSON array
    evidence_id INTEGER REFERENCES evidence(id)  -- the record that named it
);
CREATE UNIQUE INDEX processes_identity ON processes(ifnull(boot_id, ''), pid, ifnull(start_ticks, -1));
CREATE TABLE process_modules (
    process_id  INTEGER NOT NULL REFERENCES processes(id),
    path        TEXT NOT NULL,
    start       INTEGER NOT NULL,
    end         INTEGER NOT NULL,
    executable  INTEGER NOT NULL
);
CREATE INDEX process_modules_by_process ON process_modules(process_id);
