-- Hostile review of 020, finding 2 (docs/preload.md "Container pids").
--
-- A kernel record (a `segfault at` line, an amdgpu page fault, an NVIDIA Xid, a GPU reset)
-- states pids and thread ids of the initial pid namespace (inode 4026531836, PROC_PID_INIT_INO:
-- the same on every Linux since 3.8). A recording whose `pidns` is known and another (a job in
-- a container: `pid=1`, its threads 57, …) names numbers the kernel does not use for that
-- process: it joins no kernel record by pid or thread id (a container's `cron[57]` fault is not
-- its thread 57). Runtime records (ROCr, HIP logs written inside the container) state the
-- container's numbers and still join. A recording without `pidns` (older shims) is unchanged.
-- A core counts as a kernel record (hostile12c): systemd-coredump's COREDUMP_PID is the host's
-- pid; a container's own raw core then misses its recording, which is safer than a wrong join.
--
-- F5 (an exec the shim did not see): a process that exec()s into an image without the shim
-- (LD_PRELOAD dropped, a set-uid program) keeps its pid and start ticks and writes no `start`
-- record, so its recording would stay the process's image. gpufaultd's /proc snapshot of a
-- fault's process lists the files it maps executable: when the recording names its executable
-- (`exe=`) and none of those files has that base name (" (deleted)" aside; base names, as a
-- container's paths differ from the host's), the process runs another image than the one
-- recorded, and rule 1 (`process`) does not join them: its buffers went with the exec.
DROP VIEW fault_alloc_process;
DROP VIEW fault_alloc_process_tid;
DROP VIEW fault_alloc_process_pid;
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
         (SELECT ek.kind FROM evidence ek WHERE ek.id = c.evidence_id)
             IN ('cpu_segfault', 'amdgpu_page_fault', 'nvidia_xid', 'gpu_reset', 'coredump')
           AND r.pidns IS NOT NULL AND r.pidns <> 4026531836 AS foreign_ns,
         CASE
           WHEN c.proc_start_ticks IS NOT NULL AND c.proc_boot_id IS NOT NULL
                AND r.start_ticks IS NOT NULL AND r.boot_id IS NOT NULL
             THEN CASE WHEN c.proc_boot_id = r.boot_id AND c.proc_start_ticks = r.start_ticks
                            AND NOT EXISTS (
                                SELECT 1 FROM processes p
                                WHERE p.id = (SELECT min(p0.id) FROM processes p0
                                              WHERE p0.evidence_id = c.evidence_id)
                                  AND r.exe IS NOT NULL AND r.exe <> ''
                                  AND EXISTS (SELECT 1 FROM process_modules m
                                              WHERE m.process_id = p.id AND m.executable)
                                  AND NOT EXISTS (
                                      SELECT 1 FROM process_modules m
                                      WHERE m.process_id = p.id AND m.executable
                                        AND replace(replace(m.path, ' (deleted)', ''),
                                                    rtrim(replace(m.path, ' (deleted)', ''),
                                                          replace(replace(m.path, ' (deleted)', ''),
                                                                  '/', '')), '')
                                          = replace(replace(r.exe, ' (deleted)', ''),
                                                    rtrim(replace(r.exe, ' (deleted)', ''),
                                                          replace(replace(r.exe, ' (deleted)', ''),
                                                                  '/', '')), '')))
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
WHERE how IS NOT NULL AND NOT foreign_ns;

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
         (SELECT ek.kind FROM evidence ek WHERE ek.id = c.evidence_id)
             IN ('cpu_segfault', 'amdgpu_page_fault', 'nvidia_xid', 'gpu_reset', 'coredump')
           AND r.pidns IS NOT NULL AND r.pidns <> 4026531836 AS foreign_ns,
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
WHERE how IS NOT NULL AND NOT foreign_ns
  AND NOT EXISTS (SELECT 1 FROM fault_alloc_process_pid d WHERE d.evidence_id = fault_evidence);

CREATE VIEW fault_alloc_process AS
SELECT evidence_id, alloc_process_id, how, clock, fault_lo_us, fault_hi_us, 0 AS thread
FROM fault_alloc_process_pid
UNION ALL
SELECT evidence_id, alloc_process_id, how, clock, fault_lo_us, fault_hi_us, 1
FROM fault_alloc_process_tid;
