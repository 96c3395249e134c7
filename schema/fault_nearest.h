// The nearest operand of each fault record, for `gpufault faults`: the answer the
// fault_operand_distance view gives (schema/sql/019_rank_context.sql), computed in one pass over
// each stream's operands instead of the view's fault × operand join with a window over it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schema/sqlite.h"

namespace gpufault {

/// A fault record to measure: its address and where its operands may come from.
struct NearestProbe {
    int64_t evidence_id = 0;
    int64_t source_id = 0;
    uint64_t line = 0;     ///< the record's line in its stream
    uint64_t address = 0;  ///< fault address (bytes, unsigned)
    std::optional<int64_t> pid;
    std::optional<int64_t> rank;
    /// operands at or before this line belong to an earlier process of the stream
    /// (processStartSql() in queries.cpp); 0 when none
    uint64_t start_line = 0;
};

/// The operand nearest to one fault record.
struct Nearest {
    std::string name;
    std::optional<int64_t> distance;  ///< bytes, as Span::distance (none: beyond ±2^63)
    bool inside = false;
    bool after = false;  ///< logged after the fault (chosen only when none was logged before)
};

/// True when `a` comes before `b` in nearestOperands()'s order (logged before the fault first,
/// then by |distance|, refused distances last, then inside first); ties: false.
bool nearerThan(const Nearest& a, const Nearest& b);

/// For each probe, the operand of its stream (pid and rank where both state one, logged after
/// start_line) chosen as the view orders them: logged at or before the fault first, then by
/// |distance| (refused distances last), inside first, latest line first. Probes with no such
/// operand are absent. Reads each stream's operands once (memory: one entry per probe).
db::Result<std::map<int64_t, Nearest>> nearestOperands(db::Db& d,
                                                       const std::vector<NearestProbe>& probes);

}  // namespace gpufault
