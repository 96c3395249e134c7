-- A recording is one process's allocation records: its boot id, pid and start ticks (the shim's
-- `start` record). Its records are stored once whatever file they came through: a copy of the
-- file, the file deleted and re-created, an earlier generation of a file cut short or written
-- again (schema/store_allocations.cpp, docs/preload.md "One recording, many files").
--
-- recording: the key of the process an alloc_processes row stands for:
--   'boot B pid P ticks T'    a start record with boot id and start ticks (this shim);
--   'pid P wall W mono M'     a start record of an older shim (without them): its two clocks;
--   'source S pid P line L'   a start record with none of these: that record alone;
--   'file D:I pid P'          no start record (line 0): the file's device and inode ('source S
--                             pid P' without them). A later generation of the same file (same
--                             path, device, inode) takes the key (and identity) of the pid's
--                             last recording in the earlier one instead: it continues it.
ALTER TABLE alloc_processes ADD COLUMN recording TEXT;

CREATE VIEW alloc_process_key AS
SELECT p.id AS id,
       CASE WHEN p.line > 0 AND p.boot_id IS NOT NULL AND p.start_ticks IS NOT NULL
              THEN 'boot ' || p.boot_id || ' pid ' || p.pid || ' ticks ' || p.start_ticks
            WHEN p.line > 0 AND (p.wall_us IS NOT NULL OR p.mono_us IS NOT NULL)
              THEN 'pid ' || p.pid || ' wall ' || ifnull(p.wall_us, '-') || ' mono '
                   || ifnull(p.mono_us, '-')
            WHEN p.line > 0
              THEN 'source ' || p.source_id || ' pid ' || p.pid || ' line ' || p.line
            WHEN s.device IS NOT NULL AND s.inode IS NOT NULL
              THEN 'file ' || s.device || ':' || s.inode || ' pid ' || p.pid
            ELSE 'source ' || p.source_id || ' pid ' || p.pid END AS recording
FROM alloc_processes p JOIN sources s ON s.id = p.source_id;

UPDATE alloc_processes SET recording = (SELECT k.recording FROM alloc_process_key k
                                        WHERE k.id = alloc_processes.id);
CREATE INDEX alloc_processes_recording ON alloc_processes(recording);

-- The source whose file recorded the free, when it is not the row's own (free_line is a line
-- of that file): a copy of the recording, a later generation of the file.
ALTER TABLE allocations ADD COLUMN free_source_id INTEGER REFERENCES sources(id);

-- Rows stored twice before this version (the same record of one recording through two files):
-- the first is kept, with the free of a copy when it had none; the others are removed.
CREATE TEMP TABLE alloc_copies AS
SELECT a.id AS id,
       min(a.id) OVER (PARTITION BY p.recording, a.kind, a.api, a.ptr, a.end, a.tid, a.wall_us,
                                    a.mono_us,
                                    CASE WHEN a.wall_us IS NULL AND a.mono_us IS NULL
                                         THEN a.line END) AS keep
FROM allocations a
JOIN alloc_processes p ON p.source_id = a.source_id AND p.pid = a.pid AND p.line = a.start_line;
UPDATE allocations
SET free_line = d.free_line, free_api = d.free_api, freed_wall_us = d.freed_wall_us,
    freed_mono_us = d.freed_mono_us,
    free_source_id = CASE WHEN d.source_id <> allocations.source_id THEN d.source_id END
FROM (SELECT c.keep AS keep, a.source_id AS source_id, a.free_line AS free_line,
             a.free_api AS free_api, a.freed_wall_us AS freed_wall_us,
             a.freed_mono_us AS freed_mono_us
      FROM alloc_copies c JOIN allocations a ON a.id = c.id
      WHERE c.id <> c.keep AND a.free_line IS NOT NULL) d
WHERE allocations.id = d.keep AND allocations.free_line IS NULL;
DELETE FROM allocations WHERE id IN (SELECT id FROM alloc_copies WHERE id <> keep);
DROP TABLE alloc_copies;
