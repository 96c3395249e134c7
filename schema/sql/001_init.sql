-- gpufault store, version 1. Applied by schema/migrations.cpp inside one transaction;
-- PRAGMA auto_vacuum=INCREMENTAL is set before this runs on a new file.

-- Checkpoints: one row per input stream. A file is identified by device + inode + a
-- fingerprint of its first bytes (inodes are reused); `offset`/`line` is where a resumed ingest
-- starts (the start of the oldest block a parser had not finished).
CREATE TABLE sources (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL,
    kind        TEXT NOT NULL DEFAULT 'file',
    device      INTEGER,
    inode       INTEGER,
    fingerprint TEXT,
    size        INTEGER,
    offset      INTEGER NOT NULL DEFAULT 0,
    line        INTEGER NOT NULL DEFAULT 0,
    max_line    INTEGER NOT NULL DEFAULT 0,
    complete    INTEGER NOT NULL DEFAULT 0,
    ingested_at TEXT
);
CREATE UNIQUE INDEX sources_identity ON sources(kind, ifnull(device, -1), ifnull(inode, -1), ifnull(fingerprint, ''));

-- Evidence: one row per reported item (docs/evidence.md). Addresses are INTEGER holding the
-- 64-bit pattern; align_log2 = trailing zero bits (64 for address 0), so 2 MiB aligned is
-- align_log2 >= 21 and an index answers it.
CREATE TABLE evidence (
    id            INTEGER PRIMARY KEY,
    source_id     INTEGER NOT NULL REFERENCES sources(id),
    line          INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    vendor        TEXT,
    kernel_s      REAL,
    wall          TEXT,
    runtime_us    INTEGER,
    address       INTEGER,
    address_exact INTEGER,
    align_log2    INTEGER,
    pci           TEXT,
    gpu_node      INTEGER,
    pid           INTEGER,
    process       TEXT,
    tid           INTEGER,
    thread        TEXT,
    runtime_tid   TEXT,
    vmid          INTEGER,
    pasid         INTEGER,
    hub           TEXT,
    retry         INTEGER,
    client        TEXT,
    status        INTEGER,
    access        TEXT,
    reason        TEXT,
    xid           INTEGER,
    kernel        TEXT,
    module        TEXT,
    module_offset INTEGER,
    rank          INTEGER,
    count         INTEGER NOT NULL DEFAULT 1,
    attrs         TEXT,
    raw           TEXT NOT NULL
);
CREATE UNIQUE INDEX evidence_identity ON evidence(source_id, kind, line, ifnull(address, -1),
                                                  ifnull(pci, ''), ifnull(gpu_node, -1));
CREATE INDEX evidence_kind ON evidence(kind);
CREATE INDEX evidence_align ON evidence(align_log2);
CREATE INDEX evidence_address ON evidence(address);

-- Kernels by name; dispatch counts per (process, kernel) in full; dispatch rows only in the
-- window before each fault and at the end of each stream.
CREATE TABLE kernels (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE dispatch_counts (
    source_id  INTEGER NOT NULL REFERENCES sources(id),
    pid        INTEGER,
    kernel_id  INTEGER NOT NULL REFERENCES kernels(id),
    n          INTEGER NOT NULL,
    first_line INTEGER NOT NULL,
    last_line  INTEGER NOT NULL
);
CREATE UNIQUE INDEX dispatch_counts_key ON dispatch_counts(source_id, ifnull(pid, -1), kernel_id);
CREATE TABLE dispatches (
    id          INTEGER PRIMARY KEY,
    source_id   INTEGER NOT NULL REFERENCES sources(id),
    line        INTEGER NOT NULL,
    runtime_us  INTEGER,
    pid         INTEGER,
    runtime_tid TEXT,
    kernel_id   INTEGER NOT NULL REFERENCES kernels(id)
);
CREATE UNIQUE INDEX dispatches_identity ON dispatches(source_id, line);

-- Operands: recorded buffers [ptr, end) in bytes.
CREATE TABLE operands (
    id          INTEGER PRIMARY KEY,
    source_id   INTEGER NOT NULL REFERENCES sources(id),
    line        INTEGER NOT NULL,
    pid         INTEGER,
    name        TEXT NOT NULL,
    ptr         INTEGER NOT NULL,
    end         INTEGER NOT NULL,
    arg_ptr     INTEGER,
    shape       TEXT,
    stride      TEXT,
    dtype       TEXT,
    origin      TEXT NOT NULL,
    rank        INTEGER,
    runtime_us  INTEGER,
    dispatch_id INTEGER REFERENCES dispatches(id)
);
CREATE UNIQUE INDEX operands_identity ON operands(source_id, line, ptr, name);
CREATE INDEX operands_process_ptr ON operands(source_id, pid, ptr);

CREATE TABLE warnings (
    id        INTEGER PRIMARY KEY,
    source_id INTEGER NOT NULL REFERENCES sources(id),
    line      INTEGER NOT NULL,
    message   TEXT NOT NULL
);
CREATE UNIQUE INDEX warnings_identity ON warnings(source_id, line, message);

-- Incidents: recomputed from evidence after each ingest (correlate/).
CREATE TABLE incidents (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL,
    vendor      TEXT,
    address     INTEGER,
    pid         INTEGER,
    process     TEXT,
    reason      TEXT,
    kernel      TEXT,
    signature   TEXT,
    first_evidence INTEGER NOT NULL REFERENCES evidence(id)
);
-- role: 'member' (a fault record of this incident) or 'context' (reset, allocation failure).
CREATE TABLE incident_evidence (
    incident_id INTEGER NOT NULL REFERENCES incidents(id),
    evidence_id INTEGER NOT NULL REFERENCES evidence(id),
    role        TEXT NOT NULL,
    link        TEXT NOT NULL,
    PRIMARY KEY (incident_id, evidence_id)
);
CREATE INDEX incident_evidence_by_evidence ON incident_evidence(evidence_id);

-- One row per (fault record, operand of the same process): the operand is of the same
-- stream and neither pid contradicts the other. distance: bytes, negative below ptr (address -
-- ptr), 0 inside [ptr, end), positive at or above end (address - end; `inside` tells 0 apart).
-- rank_in_time: 1 = the operand logged last before the fault; NULL for operands logged after.
CREATE VIEW fault_operand_distance AS
SELECT e.id AS evidence_id,
       o.id AS operand_id,
       e.address AS address,
       o.name AS name,
       o.ptr AS ptr,
       o.end AS end,
       CASE WHEN e.address < o.ptr THEN e.address - o.ptr
            WHEN e.address >= o.end THEN e.address - o.end
            ELSE 0 END AS distance,
       e.address >= o.ptr AND e.address < o.end AS inside,
       e.address - o.ptr AS from_ptr,
       (e.address >> 21) = (o.ptr >> 21) OR (e.address >> 21) = ((o.end - 1) >> 21) AS same_2mib,
       CASE WHEN o.line <= e.line THEN
            row_number() OVER (PARTITION BY e.id, o.line <= e.line ORDER BY o.line DESC, o.id DESC)
       END AS rank_in_time,
       o.line AS operand_line,
       e.line AS fault_line
FROM evidence e
JOIN operands o ON o.source_id = e.source_id
               AND (o.pid IS NULL OR e.pid IS NULL OR o.pid = e.pid)
WHERE e.address IS NOT NULL;
