// Dispatch context across streams (EVIDENCE.md): a fault read from a stream that logged no
// dispatch before it (a ROCr line on stderr while AMD_LOG_LEVEL_FILE sends the HIP log to
// `<name>_<pid>`; a kernel record) takes its last dispatches and operands from the one other
// stream and process whose logged operands place its address (docs/correlation.md, "Dispatch
// context across streams").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schema/queries.h"
#include "schema/sqlite.h"

namespace gpufault {

/// The stream and process whose operand places a fault address of another stream.
struct ContextStream {
    int64_t source_id = 0;
    std::string source;          ///< its path
    std::optional<int64_t> pid;  ///< the pid the operand states (none: its stream states none)
    std::optional<int64_t>
        rank;  ///< the rank it states: dispatches and operands of another are not its
    /// Its dispatches and operands lie after this line (an earlier run's ROCr fault in a stream
    /// that states no pid; 0: none) and before `before_line` (the run's own ROCr fault;
    /// UINT64_MAX: none).
    uint64_t after_line = 0;
    uint64_t before_line = UINT64_MAX;
    std::string operand;  ///< the operand's name
    uint64_t operand_line = 0;
    uint64_t ptr = 0, end = 0;  ///< its span [ptr, end), bytes
    bool inside = false;        ///< the address lies in the span; else only in its 2 MiB regions
};

/// What the operands of other streams say about one fault record.
struct ContextMatch {
    /// One per (stream, process, rank, run) whose operands place the address, with its best operand
    /// (the span holding the address, else the latest line); when any span holds the address,
    /// only such candidates are listed. Ordered by stream path, pid, run.
    std::vector<ContextStream> candidates;
    /// The context: the only candidate; none when two or more place the address (which of
    /// those processes faulted is unknown).
    const ContextStream* chosen() const {
        return candidates.size() == 1 ? &candidates.front() : nullptr;
    }
};

/// A fault record with an address whose own stream logged no dispatch before it.
struct ContextProbe {
    int64_t evidence_id = 0;
    int64_t source_id = 0;        ///< its stream: never its own context
    uint64_t address = 0;         ///< bytes
    std::optional<int64_t> rank;  ///< operands stating another rank never place it
};

/// For each probe, the operands of other streams whose span [ptr, end) holds the address or
/// meets one of its 2 MiB regions (`address >> 21`; the first 2 MiB places nothing: NULL-near
/// addresses are every process's). Probes without a candidate are absent. Reads every operand
/// once (memory: one entry per stored operand), and only when `probes` is not empty.
db::Result<std::map<int64_t, ContextMatch>> queryContextStreams(
    db::Db& d, const std::vector<ContextProbe>& probes);

/// Pid-less ROCr fault lines by (stream, rank; INT64_MIN: none stated), ascending: a stream
/// that states no pid holds one program's runs one after another, each ended by one (ROCr
/// aborts the process; docs/correlation.md "Contradictions").
using RunEnds = std::map<std::pair<int64_t, int64_t>, std::vector<uint64_t>>;
db::Result<RunEnds> queryRunEnds(db::Db& d);
/// The line after which the run holding `line` of a pid-less record of `source_id` and `rank`
/// starts (the last such ROCr line before it; 0: none), as processStartSql() in queries.cpp.
uint64_t runStart(const RunEnds& ends,
                  int64_t source_id,
                  std::optional<int64_t> rank,
                  uint64_t line);

/// The probe of stored record `evidence_id`: nullopt when it has no address or is not stored.
db::Result<std::optional<ContextProbe>> contextProbeOf(db::Db& d, int64_t evidence_id);

/// The last `limit` dispatches of the context's process and run in its stream, newest first.
db::Result<std::vector<DispatchRow>> queryContextDispatches(db::Db& d,
                                                            const ContextStream& c,
                                                            int limit);

/// Hands each operand of the context's process, rank and run in its stream to `f`, by line,
/// one row at a time (memory flat in their number).
db::Result<void> forEachContextOperand(db::Db& d,
                                       const ContextStream& c,
                                       const std::function<void(OperandRow&&)>& f);

/// The context of each member record with an address of `incident` (role member), for an
/// incident whose member streams logged no dispatch before it (the caller checks that).
db::Result<std::map<int64_t, ContextMatch>> queryIncidentContext(db::Db& d, int64_t incident);

/// The incident's one context from its members' matches: none when a member's address is
/// ambiguous or two members' contexts differ (which process faulted is not known then); else
/// the context of record `primary` (the fault address's) when it has one, else the first
/// member's. `chosen` receives each member's context (for queryIncidentDistances()).
std::optional<ContextStream> incidentContext(const std::map<int64_t, ContextMatch>& matches,
                                             std::optional<int64_t> primary,
                                             std::map<int64_t, ContextStream>& chosen);

}  // namespace gpufault
