-- Hostile review of issue 4, findings 1 and 2 (docs/preload.md "One recording, many files",
-- "The end of a recording process").
--
-- 1. exec() keeps the pid and the start ticks: a process that exec()s with the shim preloaded
--    writes a second `start` record with the same boot, pid and start ticks. Each `start` record
--    of this identity is another program image, so another recording: the key also names the
--    start record's clocks ('boot B pid P ticks T wall W mono M'), and the image before an exec
--    ends at the next image's start (ended_by = 'exec': exact, from the records; NULL: the end
--    gpufaultd noticed, an upper bound).
-- 2. pidns: the inode of the recording process's pid namespace (newer shims); a job in a
--    container records its own namespace's pid, which the host's /proc does not know.
-- 3. Wall time (docs/evidence.md "Wall time"): 016 read every older row as local time even when
--    its raw line states the zone, took a local time in a DST gap or overlap as plain 'local'
--    (now 'local_ambiguous', the earlier reading: fault_clock does not join on it), and took
--    dates that do not exist (Feb 30) and offsets no zone uses (+0060). The C++ step queued
--    below reads every row's wall time again as a fresh ingest does, in batches (Store::
--    restateWallZones, schema/store_wall.cpp); upgrade_steps.next_id: the last row done.
ALTER TABLE alloc_processes ADD COLUMN pidns INTEGER;
ALTER TABLE alloc_processes ADD COLUMN ended_by TEXT;

DROP VIEW alloc_process_key;
CREATE VIEW alloc_process_key AS
SELECT p.id AS id,
       CASE WHEN p.line > 0 AND p.boot_id IS NOT NULL AND p.start_ticks IS NOT NULL
              THEN 'boot ' || p.boot_id || ' pid ' || p.pid || ' ticks ' || p.start_ticks
                   || ' wall ' || ifnull(p.wall_us, '-') || ' mono ' || ifnull(p.mono_us, '-')
            WHEN p.line > 0 AND (p.wall_us IS NOT NULL OR p.mono_us IS NOT NULL)
              THEN 'pid ' || p.pid || ' wall ' || ifnull(p.wall_us, '-') || ' mono '
                   || ifnull(p.mono_us, '-')
            WHEN p.line > 0
              THEN 'source ' || p.source_id || ' pid ' || p.pid || ' line ' || p.line
            WHEN s.device IS NOT NULL AND s.inode IS NOT NULL
              THEN 'file ' || s.device || ':' || s.inode || ' pid ' || p.pid
            ELSE 'source ' || p.source_id || ' pid ' || p.pid END AS recording
FROM alloc_processes p JOIN sources s ON s.id = p.source_id;

-- Rows keyed before (a `start` row, or a row of records before any `start` that continued one:
-- it holds that start's clocks) take the image's clocks into the key.
UPDATE alloc_processes
SET recording = recording || ' wall ' || ifnull(wall_us, '-') || ' mono ' || ifnull(mono_us, '-')
WHERE recording LIKE 'boot %';

-- The images before an exec end at the next image's start.
UPDATE alloc_processes AS me
SET (ended_wall_us, ended_mono_us, ended_by) =
    (SELECT q.wall_us, q.mono_us, 'exec' FROM alloc_processes q
     WHERE q.pid = me.pid AND q.boot_id = me.boot_id AND q.start_ticks = me.start_ticks
       AND q.mono_us > me.mono_us AND q.recording <> me.recording
     ORDER BY q.mono_us LIMIT 1)
WHERE me.boot_id IS NOT NULL AND me.start_ticks IS NOT NULL AND me.mono_us IS NOT NULL
  AND EXISTS (SELECT 1 FROM alloc_processes q
              WHERE q.pid = me.pid AND q.boot_id = me.boot_id AND q.start_ticks = me.start_ticks
                AND q.mono_us > me.mono_us AND q.recording <> me.recording)
  AND (me.ended_mono_us IS NULL
       OR me.ended_mono_us > (SELECT min(q.mono_us) FROM alloc_processes q
                              WHERE q.pid = me.pid AND q.boot_id = me.boot_id
                                AND q.start_ticks = me.start_ticks AND q.mono_us > me.mono_us
                                AND q.recording <> me.recording));

-- As in 012, but the /proc identity (boot, start ticks) names a process, not an image: of the
-- images of that process, the one that had started by the fault (on the fault's clock) and that
-- no later image of it replaced before the fault; without a clock, the last image.
DROP VIEW fault_alloc_process;
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

-- As in 016, less a local time the zone's DST change skipped or repeated (not a guess).
DROP VIEW fault_clock;
CREATE VIEW fault_clock AS
SELECT e.id AS evidence_id,
       e.pid AS pid,
       CASE WHEN e.wall_zone IS NOT 'local_ambiguous' THEN e.wall_utc_us END AS wall_us,
       CASE WHEN s.fingerprint LIKE 'boot %' THEN substr(s.fingerprint, 6) END AS boot_id,
       CASE WHEN s.fingerprint LIKE 'boot %' THEN CAST(round(e.kernel_s * 1000000) AS INTEGER) END
           AS mono_us,
       (SELECT p.boot_id FROM processes p WHERE p.evidence_id = e.id ORDER BY p.id LIMIT 1)
           AS proc_boot_id,
       (SELECT p.start_ticks FROM processes p WHERE p.evidence_id = e.id ORDER BY p.id LIMIT 1)
           AS proc_start_ticks
FROM evidence e JOIN sources s ON s.id = e.source_id
WHERE e.pid IS NOT NULL;

CREATE TABLE upgrade_steps (
    name    TEXT PRIMARY KEY,
    next_id INTEGER NOT NULL DEFAULT 0
);
INSERT INTO upgrade_steps(name) VALUES ('restate-wall-zones');
