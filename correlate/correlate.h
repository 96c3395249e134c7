// Correlation v1: evidence → incidents. Pure: rows in, incident records out.
// The rules are documented in docs/correlation.md; every link records its reason.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "schema/queries.h"
#include "schema/store.h"

namespace gpufault {

/// Tunables of the join rules.
struct CorrelationRules {
    double max_gap_s = 2.0;       ///< records on one clock further apart never join
    int same_stream_lines = 50;   ///< without a clock: records this many lines apart may join
    int neighbours = 16;          ///< same-stream records compared with this many predecessors
    double reset_after_s = 30.0;  ///< a GPU reset this soon after a fault of its device is context
    int64_t core_after_s = 600;   ///< a core written this long after its process's record joins it
    int64_t core_before_s = 2;    ///< … or this long before it (clocks to the second)
};

/// What the store knows beyond the records themselves: what tells a host pid (as the kernel
/// prints it) to the runtime's streams, and the kernels dispatched before records.
struct ProcessLinks {
    /// host pid → the pid the same process had in its innermost pid namespace (NSpid of a
    /// /proc snapshot gpufaultd took): kernel records of the host pid join runtime records
    /// stating the namespace pid.
    std::map<int64_t, int64_t> ns_pids;
    /// host pid → (source id, run id) of `gpufault run` jobs that spawned it: kernel records of
    /// the pid join the fault records of the run's captured output.
    std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> run_sources;
    /// evidence id → the kernel dispatched last before that record (lastKernelOf(), only when
    /// it is not ambiguous): part of the incident's signature for a record that names no kernel.
    std::map<int64_t, std::string> last_kernels;
};

/// Groups incident-opening evidence into incidents and attaches context records (GPU resets,
/// allocation failures). Deterministic whatever the order of `evidence` or of ingests: records
/// are ordered by (source path, line) first.
std::vector<IncidentRecord> correlate(const std::vector<StoredEvidence>& evidence,
                                      const CorrelationRules& rules = {},
                                      const ProcessLinks& links = {});

/// correlate(), asking `stop` every few thousand steps (and before each phase): nullopt as
/// soon as it returns true (a daemon told to exit must not wait for a long correlation).
std::optional<std::vector<IncidentRecord>> correlateUnless(
    const std::function<bool()>& stop,
    const std::vector<StoredEvidence>& evidence,
    const CorrelationRules& rules = {},
    const ProcessLinks& links = {});

/// True for records reported by the kernel (host pid namespace, kernel clock); cores count as
/// kernel side (their pid contradicts another kernel record's pid).
bool isKernelSide(Kind k);

/// `YYYY-MM-DDTHH:MM:SS` as seconds (to compare two stamps of one zone); nullopt otherwise.
std::optional<int64_t> wallSeconds(std::string_view wall);

}  // namespace gpufault
