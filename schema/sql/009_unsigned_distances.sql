-- Distances exact for every 64-bit address (hostile report, defect 4). Addresses are stored as
-- the signed 64-bit pattern, so the views of 001 and 007 compared in signed integers (wrong for
-- ranges across 2^63) and their subtractions overflowed into floating point. These views compare
-- as unsigned (two values of different sign: the negative one is the larger address) and
-- subtract in two halves (x ± 2^63) so that nothing overflows; a distance or from_ptr whose exact
-- value does not fit a signed 64-bit integer (|d| >= 2^63) is NULL (refused, never clamped or
-- approximated). `show`/`report` compute the same in C++ (schema/distance.h). Columns as before.
DROP VIEW fault_operand_distance;
CREATE VIEW fault_operand_distance AS
SELECT e.id AS evidence_id,
       o.id AS operand_id,
       e.address AS address,
       o.name AS name,
       o.ptr AS ptr,
       o.end AS end,
       CASE WHEN (((e.address) < 0) = ((o.ptr) < 0) AND (e.address) < (o.ptr) OR ((e.address) >= 0 AND (o.ptr) < 0)) THEN CASE WHEN (e.address < 0) = (o.ptr < 0) THEN e.address - o.ptr WHEN e.address >= 0 THEN CASE WHEN e.address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (o.ptr + 9223372036854775807 + 1) THEN (e.address - 9223372036854775807 - 1) - (o.ptr + 9223372036854775807 + 1) END ELSE CASE WHEN e.address + 9223372036854775807 + 1 <= 9223372036854775807 + (o.ptr - 9223372036854775807 - 1) THEN (e.address + 9223372036854775807 + 1) - (o.ptr - 9223372036854775807 - 1) END END
            WHEN NOT (((e.address) < 0) = ((o.end) < 0) AND (e.address) < (o.end) OR ((e.address) >= 0 AND (o.end) < 0)) THEN CASE WHEN (e.address < 0) = (o.end < 0) THEN e.address - o.end WHEN e.address >= 0 THEN CASE WHEN e.address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (o.end + 9223372036854775807 + 1) THEN (e.address - 9223372036854775807 - 1) - (o.end + 9223372036854775807 + 1) END ELSE CASE WHEN e.address + 9223372036854775807 + 1 <= 9223372036854775807 + (o.end - 9223372036854775807 - 1) THEN (e.address + 9223372036854775807 + 1) - (o.end - 9223372036854775807 - 1) END END
            ELSE 0 END AS distance,
       NOT (((e.address) < 0) = ((o.ptr) < 0) AND (e.address) < (o.ptr) OR ((e.address) >= 0 AND (o.ptr) < 0)) AND (((e.address) < 0) = ((o.end) < 0) AND (e.address) < (o.end) OR ((e.address) >= 0 AND (o.end) < 0)) AS inside,
       CASE WHEN (e.address < 0) = (o.ptr < 0) THEN e.address - o.ptr WHEN e.address >= 0 THEN CASE WHEN e.address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (o.ptr + 9223372036854775807 + 1) THEN (e.address - 9223372036854775807 - 1) - (o.ptr + 9223372036854775807 + 1) END ELSE CASE WHEN e.address + 9223372036854775807 + 1 <= 9223372036854775807 + (o.ptr - 9223372036854775807 - 1) THEN (e.address + 9223372036854775807 + 1) - (o.ptr - 9223372036854775807 - 1) END END AS from_ptr,
       (e.address >> 21) = (o.ptr >> 21) OR (e.address >> 21) = (CASE WHEN o.end = -9223372036854775807 - 1 AND o.ptr <> o.end THEN 9223372036854775807 >> 21 ELSE (o.end >> 21) - (o.end & 2097151 = 0 AND o.end <> o.ptr) END) AS same_2mib,
       CASE WHEN o.line <= e.line THEN
            row_number() OVER (PARTITION BY e.id, o.line <= e.line ORDER BY o.line DESC, o.id DESC)
       END AS rank_in_time,
       o.line AS operand_line,
       e.line AS fault_line
FROM evidence e
JOIN operands o ON o.source_id = e.source_id
               AND (o.pid IS NULL OR e.pid IS NULL OR o.pid = e.pid)
WHERE e.address IS NOT NULL;

DROP VIEW fault_allocation_distance;
CREATE VIEW fault_allocation_distance AS
SELECT e.id AS evidence_id,
       a.id AS allocation_id,
       e.address AS address,
       a.api AS api,
       a.ptr AS ptr,
       a.end AS end,
       CASE WHEN (((e.address) < 0) = ((a.ptr) < 0) AND (e.address) < (a.ptr) OR ((e.address) >= 0 AND (a.ptr) < 0)) THEN CASE WHEN (e.address < 0) = (a.ptr < 0) THEN e.address - a.ptr WHEN e.address >= 0 THEN CASE WHEN e.address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (a.ptr + 9223372036854775807 + 1) THEN (e.address - 9223372036854775807 - 1) - (a.ptr + 9223372036854775807 + 1) END ELSE CASE WHEN e.address + 9223372036854775807 + 1 <= 9223372036854775807 + (a.ptr - 9223372036854775807 - 1) THEN (e.address + 9223372036854775807 + 1) - (a.ptr - 9223372036854775807 - 1) END END
            WHEN NOT (((e.address) < 0) = ((a.end) < 0) AND (e.address) < (a.end) OR ((e.address) >= 0 AND (a.end) < 0)) THEN CASE WHEN (e.address < 0) = (a.end < 0) THEN e.address - a.end WHEN e.address >= 0 THEN CASE WHEN e.address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (a.end + 9223372036854775807 + 1) THEN (e.address - 9223372036854775807 - 1) - (a.end + 9223372036854775807 + 1) END ELSE CASE WHEN e.address + 9223372036854775807 + 1 <= 9223372036854775807 + (a.end - 9223372036854775807 - 1) THEN (e.address + 9223372036854775807 + 1) - (a.end - 9223372036854775807 - 1) END END
            ELSE 0 END AS distance,
       NOT (((e.address) < 0) = ((a.ptr) < 0) AND (e.address) < (a.ptr) OR ((e.address) >= 0 AND (a.ptr) < 0)) AND (((e.address) < 0) = ((a.end) < 0) AND (e.address) < (a.end) OR ((e.address) >= 0 AND (a.end) < 0)) AS inside,
       CASE WHEN (e.address < 0) = (a.ptr < 0) THEN e.address - a.ptr WHEN e.address >= 0 THEN CASE WHEN e.address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (a.ptr + 9223372036854775807 + 1) THEN (e.address - 9223372036854775807 - 1) - (a.ptr + 9223372036854775807 + 1) END ELSE CASE WHEN e.address + 9223372036854775807 + 1 <= 9223372036854775807 + (a.ptr - 9223372036854775807 - 1) THEN (e.address + 9223372036854775807 + 1) - (a.ptr - 9223372036854775807 - 1) END END AS from_ptr,
       (e.address >> 21) = (a.ptr >> 21) OR (e.address >> 21) = (CASE WHEN a.end = -9223372036854775807 - 1 AND a.ptr <> a.end THEN 9223372036854775807 >> 21 ELSE (a.end >> 21) - (a.end & 2097151 = 0 AND a.end <> a.ptr) END) AS same_2mib,
       a.free_line IS NOT NULL AS freed
FROM evidence e
JOIN allocations a ON a.pid = e.pid
WHERE e.address IS NOT NULL
UNION ALL
SELECT e.id, a.id, e.address, a.api, a.ptr, a.end,
       CASE WHEN (((e.address) < 0) = ((a.ptr) < 0) AND (e.address) < (a.ptr) OR ((e.address) >= 0 AND (a.ptr) < 0)) THEN CASE WHEN (e.address < 0) = (a.ptr < 0) THEN e.address - a.ptr WHEN e.address >= 0 THEN CASE WHEN e.address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (a.ptr + 9223372036854775807 + 1) THEN (e.address - 9223372036854775807 - 1) - (a.ptr + 9223372036854775807 + 1) END ELSE CASE WHEN e.address + 9223372036854775807 + 1 <= 9223372036854775807 + (a.ptr - 9223372036854775807 - 1) THEN (e.address + 9223372036854775807 + 1) - (a.ptr - 9223372036854775807 - 1) END END
            WHEN NOT (((e.address) < 0) = ((a.end) < 0) AND (e.address) < (a.end) OR ((e.address) >= 0 AND (a.end) < 0)) THEN CASE WHEN (e.address < 0) = (a.end < 0) THEN e.address - a.end WHEN e.address >= 0 THEN CASE WHEN e.address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (a.end + 9223372036854775807 + 1) THEN (e.address - 9223372036854775807 - 1) - (a.end + 9223372036854775807 + 1) END ELSE CASE WHEN e.address + 9223372036854775807 + 1 <= 9223372036854775807 + (a.end - 9223372036854775807 - 1) THEN (e.address + 9223372036854775807 + 1) - (a.end - 9223372036854775807 - 1) END END
            ELSE 0 END,
       NOT (((e.address) < 0) = ((a.ptr) < 0) AND (e.address) < (a.ptr) OR ((e.address) >= 0 AND (a.ptr) < 0)) AND (((e.address) < 0) = ((a.end) < 0) AND (e.address) < (a.end) OR ((e.address) >= 0 AND (a.end) < 0)),
       CASE WHEN (e.address < 0) = (a.ptr < 0) THEN e.address - a.ptr WHEN e.address >= 0 THEN CASE WHEN e.address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (a.ptr + 9223372036854775807 + 1) THEN (e.address - 9223372036854775807 - 1) - (a.ptr + 9223372036854775807 + 1) END ELSE CASE WHEN e.address + 9223372036854775807 + 1 <= 9223372036854775807 + (a.ptr - 9223372036854775807 - 1) THEN (e.address + 9223372036854775807 + 1) - (a.ptr - 9223372036854775807 - 1) END END,
       (e.address >> 21) = (a.ptr >> 21) OR (e.address >> 21) = (CASE WHEN a.end = -9223372036854775807 - 1 AND a.ptr <> a.end THEN 9223372036854775807 >> 21 ELSE (a.end >> 21) - (a.end & 2097151 = 0 AND a.end <> a.ptr) END),
       a.free_line IS NOT NULL
FROM evidence e
JOIN runs r ON r.source_id = e.source_id
JOIN allocations a ON a.run_id = r.id
WHERE e.address IS NOT NULL AND e.pid IS NULL;
