-- Allocations recorded by the preload shim (libgpufault-preload.so, docs/preload.md): one row
-- per allocation, mapping (cuMemMap/hipMemMap) or address reservation, with its free when the
-- file recorded one. Under PyTorch's caching allocator these are the allocator's segments, not
-- tensors. A source's rows are replaced when its file grew (its stored bytes unchanged); a file
-- cut short or written again is a new source and the old one's rows stay (ingest/ingest_alloc.cpp).
CREATE TABLE allocations (
    id            INTEGER PRIMARY KEY,
    source_id     INTEGER NOT NULL REFERENCES sources(id),
    run_id        INTEGER REFERENCES runs(id),  -- recorded by `gpufault run --record-allocations`
    line          INTEGER NOT NULL,   -- the record that made it
    pid           INTEGER NOT NULL,
    tid           INTEGER,
    kind          TEXT NOT NULL,      -- alloc | map | reserve
    api           TEXT NOT NULL,      -- hipMalloc, cuMemAlloc_v2, cudaMalloc, …
    mem           TEXT,               -- device | host | managed | va
    device        INTEGER,            -- ordinal as the runtime numbers it
    ptr           INTEGER NOT NULL,   -- [ptr, end) in bytes (64-bit pattern)
    end           INTEGER NOT NULL,
    handle        INTEGER,            -- physical memory handle (map)
    wall_us       INTEGER,            -- CLOCK_REALTIME, µs since the epoch
    mono_us       INTEGER,            -- CLOCK_MONOTONIC, µs
    stack         TEXT,               -- "module+0xoffset;…", innermost first
    free_line     INTEGER,
    free_api      TEXT,
    freed_wall_us INTEGER,
    freed_mono_us INTEGER
);
CREATE INDEX allocations_pid ON allocations(pid, ptr);
CREATE INDEX allocations_source ON allocations(source_id);
CREATE INDEX allocations_run ON allocations(run_id);

-- One row per (fault record, allocation of its process): the process is the record's pid, or,
-- for a record without a pid (ROCr's line) in the captured output of a run, the run's
-- allocations. distance as in fault_operand_distance; freed: a free was recorded (before or
-- after the fault: compare freed_wall_us with the fault's time).
CREATE VIEW fault_allocation_distance AS
SELECT e.id AS evidence_id,
       a.id AS allocation_id,
       e.address AS address,
       a.api AS api,
       a.ptr AS ptr,
       a.end AS end,
       CASE WHEN e.address < a.ptr THEN e.address - a.ptr
            WHEN e.address >= a.end THEN e.address - a.end
            ELSE 0 END AS distance,
       e.address >= a.ptr AND e.address < a.end AS inside,
       e.address - a.ptr AS from_ptr,
       (e.address >> 21) = (a.ptr >> 21) OR (e.address >> 21) = ((a.end - 1) >> 21) AS same_2mib,
       a.free_line IS NOT NULL AS freed
FROM evidence e
JOIN allocations a ON a.pid = e.pid
WHERE e.address IS NOT NULL
UNION ALL
SELECT e.id, a.id, e.address, a.api, a.ptr, a.end,
       CASE WHEN e.address < a.ptr THEN e.address - a.ptr
            WHEN e.address >= a.end THEN e.address - a.end
            ELSE 0 END,
       e.address >= a.ptr AND e.address < a.end,
       e.address - a.ptr,
       (e.address >> 21) = (a.ptr >> 21) OR (e.address >> 21) = ((a.end - 1) >> 21),
       a.free_line IS NOT NULL
FROM evidence e
JOIN runs r ON r.source_id = e.source_id
JOIN allocations a ON a.run_id = r.id
WHERE e.address IS NOT NULL AND e.pid IS NULL;
