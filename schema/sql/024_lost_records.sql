-- Kernel log records lost to a kmsg stream (issue 3): /dev/kmsg records the ring buffer
-- overwrote before gpufaultd read them (EPIPE, a sequence gap, records overwritten while the
-- daemon was down). Added in the transaction that commits the records read after the gap, so
-- a kill neither loses nor repeats a count: `gpufault status` shows the boot's total across
-- restarts.
ALTER TABLE sources ADD COLUMN lost_records INTEGER NOT NULL DEFAULT 0;
