-- Allocations belong to a process, not to a pid (issue 4, "pids are reused"): a training box
-- runs thousands of jobs and a container restarts with pid 1, 7 …, so an allocation file of an
-- old process with the same pid is not the faulting process's. One row per recording process:
-- the shim's `start` record (its boot and /proc/self/stat starttime since this version of the
-- shim), and, when gpufaultd saw /proc/PID end or become another process, an upper bound of
-- its end. docs/preload.md "Reused pids".
CREATE TABLE alloc_processes (
    id            INTEGER PRIMARY KEY,
    source_id     INTEGER NOT NULL REFERENCES sources(id),
    run_id        INTEGER REFERENCES runs(id),
    line          INTEGER NOT NULL,  -- its `start` record; 0: none (rows stored before 012)
    pid           INTEGER NOT NULL,
    ppid          INTEGER,
    boot_id       TEXT,              -- /proc/sys/kernel/random/boot_id (newer shims)
    start_ticks   INTEGER,           -- /proc/PID/stat starttime, clock ticks after boot (newer shims)
    wall_us       INTEGER,           -- the start record's CLOCK_REALTIME (line 0: the first allocation's)
    mono_us       INTEGER,           -- CLOCK_MONOTONIC, µs (≈ the kernel log's seconds since boot)
    ended_wall_us INTEGER,           -- gpufaultd found it gone or another process (an upper bound)
    ended_mono_us INTEGER,
    exe           TEXT
);
CREATE UNIQUE INDEX alloc_processes_identity ON alloc_processes(source_id, pid, line);
CREATE INDEX alloc_processes_pid ON alloc_processes(pid);
CREATE INDEX processes_evidence ON processes(evidence_id);

-- The `start` line of the process that made each allocation (0: none).
ALTER TABLE allocations ADD COLUMN start_line INTEGER NOT NULL DEFAULT 0;
INSERT INTO alloc_processes(source_id, run_id, line, pid, wall_us, mono_us)
SELECT source_id, max(run_id), 0, pid, min(wall_us), min(mono_us)
FROM allocations GROUP BY source_id, pid;

-- The clocks and identity of each fault record with a pid, where the store knows them:
-- wall_us: its wall time (a full date, read as local time as cores are; to the second);
-- mono_us, boot_id: its seconds since boot, for records of gpufaultd's kmsg source (the source
-- names the boot); proc_*: the /proc snapshot gpufaultd took of its process.
CREATE VIEW fault_clock AS
SELECT e.id AS evidence_id,
       e.pid AS pid,
       CAST(strftime('%s', e.wall, 'utc') AS INTEGER) * 1000000 AS wall_us,
       CASE WHEN s.fingerprint LIKE 'boot %' THEN substr(s.fingerprint, 6) END AS boot_id,
       CASE WHEN s.fingerprint LIKE 'boot %' THEN CAST(round(e.kernel_s * 1000000) AS INTEGER) END
           AS mono_us,
       (SELECT p.boot_id FROM processes p WHERE p.evidence_id = e.id ORDER BY p.id LIMIT 1)
           AS proc_boot_id,
       (SELECT p.start_ticks FROM processes p WHERE p.evidence_id = e.id ORDER BY p.id LIMIT 1)
           AS proc_start_ticks
FROM evidence e JOIN sources s ON s.id = e.source_id
WHERE e.pid IS NOT NULL;

-- Which recording process of a fault record's pid held that pid at the fault (first rule that
-- applies): 'process': the /proc snapshot's boot and start time equal the recording's (else
-- not it); another boot than the record's: not it; 'kernel time': the record's seconds since
-- boot fall from the recording's start to its end (when known), and no later recording of the
-- pid in that boot started before the fault; 'wall time': the same with the wall clock (the
-- record's second); 'only recording': no clock on either side, and it is the pid's only
-- recording process (the generations of one file, cut short or written again, are one).
-- clock, fault_lo_us, fault_hi_us: the fault's time on the clock the allocations are compared
-- with (mono or wall; NULL: none).
CREATE VIEW fault_alloc_process AS
SELECT evidence_id, alloc_process_id, how,
       CASE WHEN mono_ok THEN 'mono' WHEN c_wall IS NOT NULL AND r_wall IS NOT NULL THEN 'wall' END
           AS clock,
       CASE WHEN mono_ok THEN c_mono WHEN r_wall IS NOT NULL THEN c_wall END AS fault_lo_us,
       CASE WHEN mono_ok THEN c_mono WHEN r_wall IS NOT NULL THEN c_wall + 999999 END AS fault_hi_us
FROM (
  SELECT c.evidence_id, r.id AS alloc_process_id, c.wall_us AS c_wall, c.mono_us AS c_mono,
         r.wall_us AS r_wall,
         c.mono_us IS NOT NULL AND r.mono_us IS NOT NULL AND r.boot_id = c.boot_id AS mono_ok,
         CASE
           WHEN c.proc_start_ticks IS NOT NULL AND c.proc_boot_id IS NOT NULL
                AND r.start_ticks IS NOT NULL AND r.boot_id IS NOT NULL
             THEN CASE WHEN c.proc_boot_id = r.boot_id AND c.proc_start_ticks = r.start_ticks
                       THEN 'process' END
           WHEN c.boot_id IS NOT NULL AND r.boot_id IS NOT NULL AND c.boot_id <> r.boot_id
             THEN NULL
           WHEN c.mono_us IS NOT NULL AND r.mono_us IS NOT NULL AND r.boot_id = c.boot_id
             THEN CASE WHEN r.mono_us <= c.mono_us
                            AND (r.ended_mono_us IS NULL OR r.ended_mono_us >= c.mono_us)
                            AND NOT EXISTS (SELECT 1 FROM alloc_processes r2
                                            WHERE r2.pid = r.pid AND r2.boot_id = r.boot_id
                                              AND r2.mono_us > r.mono_us
                                              AND r2.mono_us <= c.mono_us)
                       THEN 'kernel time' END
           WHEN c.wall_us IS NOT NULL AND r.wall_us IS NOT NULL
             THEN CASE WHEN r.wall_us <= c.wall_us + 999999
                            AND (r.ended_wall_us IS NULL OR r.ended_wall_us >= c.wall_us)
                            AND NOT EXISTS (SELECT 1 FROM alloc_processes r2
                                            WHERE r2.pid = r.pid AND r2.wall_us > r.wall_us
                                              AND r2.wall_us <= c.wall_us + 999999)
                       THEN 'wall time' END
           WHEN (SELECT count(DISTINCT ifnull(r2.boot_id, '') || '/' || ifnull(r2.start_ticks, '')
                                       || '/' || ifnull(r2.wall_us, ''))
                 FROM alloc_processes r2 WHERE r2.pid = r.pid) = 1
             THEN 'only recording'
         END AS how
  FROM fault_clock c JOIN alloc_processes r ON r.pid = c.pid)
WHERE how IS NOT NULL;

-- One row per (fault record, allocation of its process): the allocations of the recording
-- process fault_alloc_process chose for the record's pid, made before the fault (on its clock);
-- for a record in the captured output of a run (without a pid, or of a pid the run recorded),
-- that run's allocations. Columns as in 010, and: freed_before: 1 when the free was recorded
-- before the fault, 0 when after it or never, NULL when the order is not known (no shared clock,
-- or in the fault's second); how: which rule joined them ('process', 'kernel time', 'wall
-- time', 'only recording', 'run').
DROP VIEW fault_allocation_distance;
CREATE VIEW fault_allocation_distance AS
SELECT evidence_id,
       allocation_id,
       address,
       api,
       ptr,
       end,
       CASE WHEN (((address) < 0) = ((ptr) < 0) AND (address) < (ptr) OR ((address) >= 0 AND (ptr) < 0)) THEN CASE WHEN (address < 0) = (ptr < 0) THEN address - ptr WHEN address >= 0 THEN CASE WHEN address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (ptr + 9223372036854775807 + 1) THEN (address - 9223372036854775807 - 1) - (ptr + 9223372036854775807 + 1) END ELSE CASE WHEN address + 9223372036854775807 + 1 <= 9223372036854775807 + (ptr - 9223372036854775807 - 1) THEN (address + 9223372036854775807 + 1) - (ptr - 9223372036854775807 - 1) END END
            WHEN NOT (((address) < 0) = ((end) < 0) AND (address) < (end) OR ((address) >= 0 AND (end) < 0)) THEN CASE WHEN (address < 0) = (end < 0) THEN address - end WHEN address >= 0 THEN CASE WHEN address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (end + 9223372036854775807 + 1) THEN (address - 9223372036854775807 - 1) - (end + 9223372036854775807 + 1) END ELSE CASE WHEN address + 9223372036854775807 + 1 <= 9223372036854775807 + (end - 9223372036854775807 - 1) THEN (address + 9223372036854775807 + 1) - (end - 9223372036854775807 - 1) END END
            ELSE 0 END AS distance,
       NOT (((address) < 0) = ((ptr) < 0) AND (address) < (ptr) OR ((address) >= 0 AND (ptr) < 0)) AND (((address) < 0) = ((end) < 0) AND (address) < (end) OR ((address) >= 0 AND (end) < 0)) AS inside,
       CASE WHEN (address < 0) = (ptr < 0) THEN address - ptr WHEN address >= 0 THEN CASE WHEN address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (ptr + 9223372036854775807 + 1) THEN (address - 9223372036854775807 - 1) - (ptr + 9223372036854775807 + 1) END ELSE CASE WHEN address + 9223372036854775807 + 1 <= 9223372036854775807 + (ptr - 9223372036854775807 - 1) THEN (address + 9223372036854775807 + 1) - (ptr - 9223372036854775807 - 1) END END AS from_ptr,
       (address >> 21) = (ptr >> 21) OR (address >> 21) = (CASE WHEN end = -9223372036854775807 - 1 AND ptr <> end THEN 9223372036854775807 >> 21 ELSE (end >> 21) - (end & 2097151 = 0 AND end <> ptr) END) AS same_2mib,
       freed,
       freed_before,
       how
FROM (SELECT e.id AS evidence_id, a.id AS allocation_id, e.address AS address, a.api AS api,
             a.ptr AS ptr, a.end AS end, a.free_line IS NOT NULL AS freed,
             CASE WHEN a.free_line IS NULL THEN 0
                  WHEN f.clock = 'mono' AND a.freed_mono_us IS NOT NULL
                    THEN a.freed_mono_us < f.fault_lo_us
                  WHEN f.clock = 'wall' AND a.freed_wall_us < f.fault_lo_us THEN 1
                  WHEN f.clock = 'wall' AND a.freed_wall_us > f.fault_hi_us THEN 0 END
                 AS freed_before,
             f.how AS how
      FROM evidence e
      JOIN fault_alloc_process f ON f.evidence_id = e.id
      JOIN alloc_processes r ON r.id = f.alloc_process_id
      JOIN allocations a ON a.source_id = r.source_id AND a.pid = r.pid AND a.start_line = r.line
      WHERE e.address IS NOT NULL
        AND (f.clock IS NULL
             OR f.clock = 'mono' AND (a.mono_us IS NULL OR a.mono_us <= f.fault_hi_us)
             OR f.clock = 'wall' AND (a.wall_us IS NULL OR a.wall_us <= f.fault_hi_us))
        AND NOT EXISTS (SELECT 1 FROM runs rn WHERE rn.source_id = e.source_id
                                                 AND rn.id = a.run_id)
      UNION ALL
      SELECT e.id, a.id, e.address, a.api, a.ptr, a.end, a.free_line IS NOT NULL,
             CASE WHEN a.free_line IS NULL THEN 0 END, 'run'
      FROM evidence e
      JOIN runs r ON r.source_id = e.source_id
      JOIN allocations a ON a.run_id = r.id
      WHERE e.address IS NOT NULL AND (e.pid IS NULL OR a.pid = e.pid));
