-- Issue "Coredumps and stacks … allocation-recording preload shim", open gaps 1 and 3
-- (docs/preload.md "Reused pids", docs/architecture.md "Cores").
--
-- 1. A fault that names a thread id. The kernel names the task that faulted: `segfault at` lines
--    print the faulting thread's id (`python3[4531]`, not the process's 4528), and other records
--    may too. The shim's records carry their thread (`tid=`), so a recording knows the threads
--    that allocated in it: a fault record whose pid no recording joins, but that is a thread id
--    some recording's allocations carry, joins that recording (fault_alloc_process.thread = 1),
--    by the same rules of time as a pid (the recording must have held its pid at the fault).
--    A recording of the number as a pid that joins by those rules comes first.
-- 2. A core's content fingerprint. A copied core is recognised by its source fingerprint (FNV-1a
--    of the first 4 KiB and the size); a zstd-compressed copy (`core.X.zst`, systemd-coredump's
--    form) has other bytes. cores.content_fingerprint is the fingerprint of the core's
--    uncompressed bytes, whatever file it was read from: a core stored once, from any copy.

-- The threads (other than the main one) that allocated in each recording.
CREATE INDEX allocations_thread ON allocations(tid) WHERE tid <> pid;
CREATE VIEW alloc_thread AS
SELECT DISTINCT r.recording AS recording, a.tid AS tid
FROM allocations a
JOIN alloc_processes r ON r.source_id = a.source_id AND r.pid = a.pid AND r.line = a.start_line
WHERE a.tid <> a.pid;

-- As in 017 (fault_alloc_process_pid, the 017 view renamed), and candidates through a thread id
-- (fault_alloc_process_tid): judged by the rules of time only (a /proc snapshot of the fault's
-- task is the thread's, whose start is not the process's), kept only when no recording of the
-- number as a pid joins the record; fault_alloc_process is both, with `thread` (0, 1). Plain
-- views (no CTE), so that a query of one record's join is pushed down to that record.
DROP VIEW fault_alloc_process;
CREATE VIEW fault_alloc_process_pid AS
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
                            AND (CASE WHEN c.mono_us IS NOT NULL AND r.mono_us IS NOT NULL
                                           AND r.boot_id = c.boot_id
                                        THEN r.mono_us <= c.mono_us
                                      WHEN c.wall_us IS NOT NULL AND r.wall_us IS NOT NULL
                                        THEN r.wall_us <= c.wall_us + 999999
                                      ELSE 1 END
                                 OR NOT EXISTS (SELECT 1 FROM alloc_processes r0
                                                WHERE r0.pid = r.pid AND r0.boot_id = r.boot_id
                                                  AND r0.start_ticks = r.start_ticks
                                                  AND r0.mono_us < r.mono_us))
                            AND NOT EXISTS (
                                SELECT 1 FROM alloc_processes r2
                                WHERE r2.pid = r.pid AND r2.boot_id = r.boot_id
                                  AND r2.start_ticks = r.start_ticks AND r2.mono_us > r.mono_us
                                  AND CASE WHEN c.mono_us IS NOT NULL AND r2.boot_id = c.boot_id
                                             THEN r2.mono_us <= c.mono_us
                                           WHEN c.wall_us IS NOT NULL AND r2.wall_us IS NOT NULL
                                             THEN r2.wall_us <= c.wall_us + 999999
                                           ELSE 1 END)
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

CREATE VIEW fault_alloc_process_tid AS
SELECT evidence_id, alloc_process_id, how,
       CASE WHEN mono_ok THEN 'mono' WHEN c_wall IS NOT NULL AND r_wall IS NOT NULL THEN 'wall' END
           AS clock,
       CASE WHEN mono_ok THEN c_mono WHEN r_wall IS NOT NULL THEN c_wall END AS fault_lo_us,
       CASE WHEN mono_ok THEN c_mono WHEN r_wall IS NOT NULL THEN c_wall + 999999 END AS fault_hi_us
FROM (
  SELECT c.evidence_id, c.evidence_id AS fault_evidence, c.pid AS tid, r.id AS alloc_process_id, c.wall_us AS c_wall, c.mono_us AS c_mono,
         r.wall_us AS r_wall,
         c.mono_us IS NOT NULL AND r.mono_us IS NOT NULL AND r.boot_id = c.boot_id AS mono_ok,
         CASE
           WHEN 0 AND c.proc_start_ticks IS NOT NULL AND c.proc_boot_id IS NOT NULL
                AND r.start_ticks IS NOT NULL AND r.boot_id IS NOT NULL
             THEN CASE WHEN c.proc_boot_id = r.boot_id AND c.proc_start_ticks = r.start_ticks
                            AND (CASE WHEN c.mono_us IS NOT NULL AND r.mono_us IS NOT NULL
                                           AND r.boot_id = c.boot_id
                                        THEN r.mono_us <= c.mono_us
                                      WHEN c.wall_us IS NOT NULL AND r.wall_us IS NOT NULL
                                        THEN r.wall_us <= c.wall_us + 999999
                                      ELSE 1 END
                                 OR NOT EXISTS (SELECT 1 FROM alloc_processes r0
                                                WHERE r0.pid = r.pid AND r0.boot_id = r.boot_id
                                                  AND r0.start_ticks = r.start_ticks
                                                  AND r0.mono_us < r.mono_us))
                            AND NOT EXISTS (
                                SELECT 1 FROM alloc_processes r2
                                WHERE r2.pid = r.pid AND r2.boot_id = r.boot_id
                                  AND r2.start_ticks = r.start_ticks AND r2.mono_us > r.mono_us
                                  AND CASE WHEN c.mono_us IS NOT NULL AND r2.boot_id = c.boot_id
                                             THEN r2.mono_us <= c.mono_us
                                           WHEN c.wall_us IS NOT NULL AND r2.wall_us IS NOT NULL
                                             THEN r2.wall_us <= c.wall_us + 999999
                                           ELSE 1 END)
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
                AND (SELECT count(DISTINCT t2.recording) FROM alloc_thread t2
                     WHERE t2.tid = c.pid) = 1
             THEN 'only recording'
         END AS how
  FROM fault_clock c
  JOIN alloc_thread t ON t.tid = c.pid
  JOIN alloc_processes r ON r.recording = t.recording AND r.pid <> c.pid)
WHERE how IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM fault_alloc_process_pid d WHERE d.evidence_id = fault_evidence);

CREATE VIEW fault_alloc_process AS
SELECT evidence_id, alloc_process_id, how, clock, fault_lo_us, fault_hi_us, 0 AS thread
FROM fault_alloc_process_pid
UNION ALL
SELECT evidence_id, alloc_process_id, how, clock, fault_lo_us, fault_hi_us, 1
FROM fault_alloc_process_tid;

-- The fingerprint of a core's uncompressed bytes ('core-<FNV-1a of the first 4 KiB>-<size>');
-- a core read from an uncompressed file has its source's.
ALTER TABLE cores ADD COLUMN content_fingerprint TEXT;
UPDATE cores SET content_fingerprint = (SELECT s.fingerprint FROM sources s
                                        WHERE s.id = cores.source_id AND s.kind = 'core'
                                          AND s.fingerprint LIKE 'core-%');
CREATE INDEX cores_content ON cores(content_fingerprint);
