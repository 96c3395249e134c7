-- A fault record's wall time as an instant (hostile review 4, "the join depends on the reader's
-- TZ"): 012's fault_clock read `wall` with strftime(..., 'utc') in the zone of whoever queried
-- the store, and dropped the zone the record stated (`+0200`, `Z`). From here on the ingest
-- derives the instant once and stores it:
-- wall_utc_us: µs since the Unix epoch of the record's second; NULL without a full date.
-- wall_zone: 'stated': the record gave its zone (`Z`, `±HH:MM`, `±HHMM`) or an epoch stamp
--   (journald __REALTIME_TIMESTAMP, short-unix), or the producer knew it (a core's time);
--   'local': no zone stated: the date was read in the ingesting process's local zone at ingest
--   (TZ, else /etc/localtime; gpufaultd's zone for what it stores). Rows stored before this
--   migration are 'local', read in the zone of the process that upgraded the store.
-- docs/evidence.md "Wall time".
ALTER TABLE evidence ADD COLUMN wall_utc_us INTEGER;
ALTER TABLE evidence ADD COLUMN wall_zone TEXT;
UPDATE evidence
SET wall_utc_us = CAST(strftime('%s', wall, 'utc') AS INTEGER) * 1000000, wall_zone = 'local'
WHERE length(wall) = 19 AND strftime('%s', wall, 'utc') IS NOT NULL;

-- As in 012, with the stored instant in place of strftime(): the answer no longer depends on
-- the reader's zone.
DROP VIEW fault_clock;
CREATE VIEW fault_clock AS
SELECT e.id AS evidence_id,
       e.pid AS pid,
       e.wall_utc_us AS wall_us,
       CASE WHEN s.fingerprint LIKE 'boot %' THEN substr(s.fingerprint, 6) END AS boot_id,
       CASE WHEN s.fingerprint LIKE 'boot %' THEN CAST(round(e.kernel_s * 1000000) AS INTEGER) END
           AS mono_us,
       (SELECT p.boot_id FROM processes p WHERE p.evidence_id = e.id ORDER BY p.id LIMIT 1)
           AS proc_boot_id,
       (SELECT p.start_ticks FROM processes p WHERE p.evidence_id = e.id ORDER BY p.id LIMIT 1)
           AS proc_start_ticks
FROM evidence e JOIN sources s ON s.id = e.source_id
WHERE e.pid IS NOT NULL;
