-- One definition of the unsigned distance arithmetic of 009 for allocations: 009 wrote it out
-- twice in fault_allocation_distance, once for each way a fault record pairs with allocations
-- (those of its pid; those of its run, for a record without a pid). Here the two pairings are
-- one subquery and the arithmetic is applied once. Same columns and rows as in 009.
-- fault_operand_distance keeps its own copy (009): defined from one view shared with the
-- allocations, every query of it would evaluate that view's UNION ALL beneath its window
-- function (measured 9-15% slower, docs/performance.md).
DROP VIEW fault_allocation_distance;
CREATE VIEW fault_allocation_distance AS
SELECT evidence_id,
       allocation_id,
       address,
       api,
       ptr,
       end,
       CASE WHEN (((address) < 0) = ((ptr) < 0) AND (address) < (ptr) OR ((address) >= 0 AND (ptr) < 0)) THEN CASE WHEN (address < 0) = (ptr < 0) THEN address - ptr WHEN address >= 0 THEN CASE WHEN address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (ptr + 9223372036854775807 + 1) THEN (address - 9223372036854775807 - 1) - (ptr + 9223372036854775807 + 1) END ELSE CASE WHEN address + 9223372036854775807 + 1 <= 9223372036854775807 + (ptr - 9223372036854775807 - 1) THEN (address + 9223372036854775807 + 1) - (ptr - 9223372036854775807 - 1) END END
            WHEN NOT (((address) < 0) = ((end) < 0) AND (address) < (end) OR ((address) >= 0 AND (end) < 0)) THEN CASE WHEN (address < 0) = (end < 0) THEN address - end WHEN address >= 0 THEN CASE WHEN address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (end + 9223372036854775807 + 1) THEN (address - 9223372036854775807 - 1) - (end + 9223372036854775807 + 1) END ELSE CASE WHEN address + 9223372036854775807 + 1 <= 9223372036854775807 + (end - 9223372036854775807 - 1) THEN (address + 9223372036854775807 + 1) - (end - 9223372036854775807 - 1) END END
            ELSE 0 END AS distance,
       NOT (((address) < 0) = ((ptr) < 0) AND (address) < (ptr) OR ((address) >= 0 AND (ptr) < 0)) AND (((address) < 0) = ((end) < 0) AND (address) < (end) OR ((address) >= 0 AND (end) < 0)) AS inside,
       CASE WHEN (address < 0) = (ptr < 0) THEN address - ptr WHEN address >= 0 THEN CASE WHEN address - 9223372036854775807 - 1 >= (-9223372036854775807 - 1) + (ptr + 9223372036854775807 + 1) THEN (address - 9223372036854775807 - 1) - (ptr + 9223372036854775807 + 1) END ELSE CASE WHEN address + 9223372036854775807 + 1 <= 9223372036854775807 + (ptr - 9223372036854775807 - 1) THEN (address + 9223372036854775807 + 1) - (ptr - 9223372036854775807 - 1) END END AS from_ptr,
       (address >> 21) = (ptr >> 21) OR (address >> 21) = (CASE WHEN end = -9223372036854775807 - 1 AND ptr <> end THEN 9223372036854775807 >> 21 ELSE (end >> 21) - (end & 2097151 = 0 AND end <> ptr) END) AS same_2mib,
       freed
FROM (SELECT e.id AS evidence_id, a.id AS allocation_id, e.address AS address, a.api AS api,
             a.ptr AS ptr, a.end AS end, a.free_line IS NOT NULL AS freed
      FROM evidence e
      JOIN allocations a ON a.pid = e.pid
      WHERE e.address IS NOT NULL
      UNION ALL
      SELECT e.id, a.id, e.address, a.api, a.ptr, a.end, a.free_line IS NOT NULL
      FROM evidence e
      JOIN runs r ON r.source_id = e.source_id
      JOIN allocations a ON a.run_id = r.id
      WHERE e.address IS NOT NULL AND e.pid IS NULL);
