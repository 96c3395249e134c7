-- Cores: one row per core file read by `gpufault ingest` (the file stays where it is; only what
-- these tables need is copied: never the environment, the command line or memory contents).
-- A CPU core has its threads and frames; a GPU core (ROCr gpucore, CUDA) only its metadata.
CREATE TABLE cores (
    id                INTEGER PRIMARY KEY,
    source_id         INTEGER NOT NULL UNIQUE REFERENCES sources(id),
    evidence_id       INTEGER REFERENCES evidence(id),  -- its `coredump` record (CPU cores)
    kind              TEXT NOT NULL,     -- cpu | rocr_gpu | cuda_gpu
    path              TEXT NOT NULL,     -- where the core was read
    size              INTEGER NOT NULL,  -- bytes
    time              INTEGER NOT NULL,  -- the core's time, UTC seconds (file modification)
    time_from         TEXT NOT NULL,     -- mtime (systemd-coredump timestamps: later)
    pid               INTEGER,           -- NT_PRPSINFO: the pid as the process saw it
    tid               INTEGER,           -- the crashing thread (first NT_PRSTATUS)
    process           TEXT,              -- comm (NT_PRPSINFO pr_fname)
    uid               INTEGER,
    signal            INTEGER,           -- NT_SIGINFO si_signo
    si_code           INTEGER,
    si_addr           INTEGER,           -- fault signals only (64-bit pattern)
    e_machine         INTEGER NOT NULL,
    signature         TEXT,              -- stack signature (hash of the top frames)
    signature_frames  TEXT,              -- JSON array: the frame keys hashed
    threads_truncated INTEGER NOT NULL DEFAULT 0,
    modules_missing   TEXT,              -- JSON array: modules named by build-id + offset only
    runtimes          TEXT,              -- JSON object: GPU runtime soname -> version (NT_FILE)
    meta              TEXT,              -- JSON object: GPU core metadata
    seconds           REAL               -- time to read and unwind
);
CREATE INDEX cores_pid ON cores(pid);
CREATE INDEX cores_evidence ON cores(evidence_id);

CREATE TABLE threads (
    id               INTEGER PRIMARY KEY,
    core_id          INTEGER NOT NULL REFERENCES cores(id),
    tid              INTEGER NOT NULL,
    crashed          INTEGER NOT NULL,
    frames_truncated INTEGER NOT NULL DEFAULT 0,
    unwind_error     TEXT               -- why unwinding stopped (libdwfl), when it said
);
CREATE UNIQUE INDEX threads_identity ON threads(core_id, tid);

-- Frames innermost first (n = 0). pc is the unwound pc (a return address in caller frames);
-- module_offset = pc - module start, as systemd-coredump prints it; symbol and line are those
-- of pc - 1 in caller frames.
CREATE TABLE frames (
    thread_id     INTEGER NOT NULL REFERENCES threads(id),
    n             INTEGER NOT NULL,
    pc            INTEGER NOT NULL,
    module        TEXT,
    build_id      TEXT,
    module_offset INTEGER,
    symbol        TEXT,
    symbol_offset INTEGER,
    file          TEXT,
    line          INTEGER,
    PRIMARY KEY (thread_id, n)
) WITHOUT ROWID;

-- Files mapped into the process (NT_FILE), one row per path: its lowest and highest address.
CREATE TABLE core_files (
    core_id INTEGER NOT NULL REFERENCES cores(id),
    path    TEXT NOT NULL,
    start   INTEGER NOT NULL,
    end     INTEGER NOT NULL
);
CREATE INDEX core_files_by_core ON core_files(core_id);
