// Why an incident's fault meets none of the allocation recordings the store holds: the one line
// `show` prints instead of an allocation table (docs/preload.md "Reused pids").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schema/sqlite.h"

namespace gpufault {

/// Allocation recordings in the store that the incident's fault did not meet, and why.
struct AllocationMiss {
    /// The faulting pid whose recordings were not joined; nullopt: recordings of other pids
    /// only (`pids` names them).
    std::optional<int64_t> pid;
    int64_t recordings = 0;     ///< recording processes counted (generations of one file: one)
    std::vector<int64_t> pids;  ///< pid == nullopt: the recordings' pids, newest first, at most 4
    int64_t pid_count = 0;      ///< … of this many pids
    /// One phrase: "recorded on another boot", "started after the fault", "ended before the
    /// fault", "the fault's records name no pid", …; reasons of several recordings are joined
    /// with "; ".
    std::string why;
};

/// The misses of incident `incident`: for each pid of its member records with recordings of
/// which none was joined, why (from the rules of view fault_alloc_process: /proc identity, boot,
/// kernel time, wall time, only recording); when `met` is false (the fault meets no allocation),
/// also a recording joined whose allocations all came after the fault (through a thread id its
/// allocations carry, too: migration 020), or, when no member pid
/// has a recording, the recordings of other pids (why: the fault's pid, or that it names none).
/// Empty when the store holds no recording. Errors are SQLite's.
db::Result<std::vector<AllocationMiss>> queryAllocationMisses(db::Db& d,
                                                              int64_t incident,
                                                              bool met);

}  // namespace gpufault
