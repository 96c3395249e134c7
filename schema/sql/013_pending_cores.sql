-- Cores of systemd-coredump journal entries that gpufaultd's journal source read and its worker
-- thread has not unwound yet (issue 3): the loop stores the entry's fields in the transaction
-- that commits the journal cursor past the entry, the worker reads and unwinds the core, stores
-- it (its own transaction) and then deletes the row. A row still here at start-up (the daemon
-- was killed or stopped first) is handed to the worker again; a core stored meanwhile is
-- recognised (same crash) and not stored twice.
CREATE TABLE pending_cores (
    id        INTEGER PRIMARY KEY,
    journal   TEXT NOT NULL,  -- the journal's directory ('' = the local system journal)
    cursor    TEXT NOT NULL,  -- the entry's cursor: its COREDUMP= core is read from there
    fields    TEXT NOT NULL,  -- the entry's fields, a JSON object (COREDUMP= left out)
    queued_at TEXT NOT NULL
);
CREATE UNIQUE INDEX pending_cores_entry ON pending_cores(journal, cursor);
