-- Distributed ranks (`[rankN]:`, docs/evidence.md "Ranks"). torchrun/DDP merges every rank's
-- output into one stream, often with no pid on its lines, so the stream and pid alone paired
-- rank 1's operands and dispatches with rank 0's faults.
--
-- dispatches.rank, held_dispatches.rank: the rank of the ShaderName line (NULL: none stated;
-- rows stored before 019 have none). A fault record takes a dispatch as context (its window,
-- `faults`' LAST KERNEL, `show`'s last dispatches) only when they do not state different ranks.
ALTER TABLE dispatches ADD COLUMN rank INTEGER;
ALTER TABLE held_dispatches ADD COLUMN rank INTEGER;

-- fault_operand_distance as in 009, but an operand whose rank differs from the fault record's
-- (both stated) is no operand of that fault, as one of a different pid is not; rank_in_time
-- counts only the operands that remain. Columns as before.
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
               AND (o.rank IS NULL OR e.rank IS NULL OR o.rank = e.rank)
WHERE e.address IS NOT NULL;
