-- Cores from systemd-coredump and apport besides plain core files (issue 4). A crash that
-- systemd-coredump recorded without keeping its core (size limit) is a row too: path is then
-- where the core would have been ('' when unknown), size 0, and `note` says why.
ALTER TABLE cores ADD COLUMN origin TEXT NOT NULL DEFAULT 'file';  -- file | systemd-coredump | apport
ALTER TABLE cores ADD COLUMN note TEXT;   -- "core not kept: size limit", "core truncated", ...
ALTER TABLE cores ADD COLUMN exe TEXT;    -- COREDUMP_EXE / ExecutablePath
