// Read side of the allocations table (schema/sql/007_allocations.sql): the preload shim's
// allocations near an incident's fault address (view fault_allocation_distance).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schema/sqlite.h"

namespace gpufault {

/// One (fault record, allocation) pair with the allocation's stored fields.
struct AllocationDistanceRow {
    int64_t evidence_id = 0;
    int64_t allocation_id = 0;
    uint64_t address = 0;
    /// bytes: <0 below ptr, 0 inside, address − end at or above end; none when |distance| ≥ 2^63
    /// (refused, schema/distance.h; `below` tells the side)
    std::optional<int64_t> distance;
    std::optional<int64_t> from_ptr;  ///< address − ptr (none when outside int64)
    bool below = false, inside = false, same_2mib = false;
    std::string source;  ///< the record file
    int64_t line = 0, pid = 0;
    std::string kind, api;  ///< kind: alloc | map | reserve
    std::optional<std::string> mem;
    std::optional<int64_t> device, wall_us;
    uint64_t ptr = 0, end = 0;
    std::optional<std::string> stack;
    std::optional<std::string> free_api;
    std::optional<int64_t> freed_wall_us;
    /// the free was recorded before the fault (true), after it (false), or the order is not
    /// known (nullopt: no clock both share, or within the fault's second); false when not freed
    std::optional<bool> freed_before;
    /// which rule made it the faulting process's: process, kernel time, wall time, only
    /// recording, run (schema/sql/012_alloc_processes.sql)
    std::string how;
    /// its program image was replaced by an exec (a later `start` record of the same process):
    /// its address space is gone from then on
    bool exec_replaced = false;
    /// that exec came before the fault (true: the buffer was gone when it faulted), after it or
    /// never (false), or the order is not known (nullopt: joined without a clock, a run's
    /// output, or the exec within the fault's second)
    std::optional<bool> exec_before = false;
    /// `PATH:LINE` of the free when another file of the recording recorded it (a copy, a later
    /// generation of the file: allocations.free_source_id); unset when the row's own file did
    std::optional<std::string> free_elsewhere;
};

/// The allocations of the incident's process, by |distance| from each member record's address
/// (then newest first): those of the recording process that held a member record's pid at that
/// record's time (view fault_alloc_process: a pid alone is not enough, pids are reused), made
/// before the fault; for a record in a run's output, the run's. Distances are computed here
/// from the stored address, ptr and end in unsigned arithmetic: exact for every 64-bit address,
/// refused ones last.
db::Result<std::vector<AllocationDistanceRow>> queryIncidentAllocations(db::Db& d,
                                                                        int64_t incident);

}  // namespace gpufault
