-- The systemd journal is resumed by cursor (sd_journal_seek_cursor), not by byte offset.
ALTER TABLE sources ADD COLUMN cursor TEXT;
