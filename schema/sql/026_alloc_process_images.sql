-- Hostile review 155, HIGH 1: a file of many `start` records (10 000 exec images of one process:
-- 131 s) made each piece of an allocation ingest compare every image of the pid with every
-- other (Store::appendAllocations, step 5). The images of a process are now read in start
-- order from the first one before this piece's (this index), and the rows whose recording key
-- is still to be set are found without reading the source's other rows.
CREATE INDEX IF NOT EXISTS alloc_processes_image ON alloc_processes(pid, start_ticks, mono_us);
CREATE INDEX IF NOT EXISTS alloc_processes_unkeyed ON alloc_processes(source_id)
    WHERE recording IS NULL;
