// Incident groups: incidents with the same signature (correlate/: vendor, kinds, reasons,
// clients, kernels and stack of their records), for `gpufault groups`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schema/sqlite.h"

namespace gpufault {

/// One signature and the incidents that have it.
struct IncidentGroup {
    std::string signature;  ///< 16 hex digits ("" for incidents stored without one)
    /// What makes the signature, from its first incident: kind, vendor, reason, kernel (the
    /// mangled name), the member record kinds (comma-separated), the first member's client
    /// (amdgpu UTCL2 client, NVIDIA MMU client) and the top frame of a crash record's crashing
    /// thread (`symbol (module + 0xoff)`), each unset when none says it.
    std::string kind, kinds;
    std::optional<std::string> vendor, reason, kernel, client, frame;
    /// the NVIDIA Xid number a member record of the first incident states (part of the signature:
    /// correlate/ signatureOf()); unset when none states one
    std::optional<int64_t> xid;
    int64_t incidents = 0;
    int64_t processes = 0;  ///< distinct (pid, process name) pairs among the incidents with a pid
    int64_t runs = 0;       ///< distinct `gpufault run` jobs whose output holds a member record
    int64_t sources = 0;    ///< distinct inputs (files, streams) holding a member record
    /// Hosts the store knows for member records (the host of their run, of the GPU they name in
    /// `devices`), sorted; empty when none is known.
    std::vector<std::string> hosts;
    /// Earliest and latest instant of a member record (µs since the epoch, UTC): the record's
    /// wall time as stored (wall_utc_us), or its core's time; unset when no record has one.
    std::optional<int64_t> first_us, last_us;
    /// Incidents of the group with such an instant: first_us/last_us count only these (a record
    /// timed by `kernel_s` or `runtime_us` alone, seconds since a boot or a process start, has
    /// none).
    int64_t timed = 0;
    std::vector<int64_t> examples;  ///< the first incident ids, ascending (at most `examples`)
};

/// Incidents grouped by signature, the largest group first (ties: the group whose first
/// incident is oldest). `examples`: incident ids kept per group. Errors: SQLite's message.
db::Result<std::vector<IncidentGroup>> queryIncidentGroups(db::Db& d, size_t examples = 3);

}  // namespace gpufault
