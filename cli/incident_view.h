// Everything `show` and `report` print about one incident, loaded once from the store.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "schema/alloc_misses.h"
#include "schema/alloc_queries.h"
#include "schema/context_stream.h"
#include "schema/queries.h"

namespace gpufault::cli {

/// Operand rows `show` and `report` print per fault record: the nearest by |distance|, and the
/// latest logged before the fault (a probe logging every call leaves millions; the rest is one
/// query away).
constexpr size_t kNearestOperands = 20, kLatestOperands = 10;

struct IncidentView {
    IncidentRow incident;
    std::vector<IncidentMemberRow> members;  ///< fault records, then context records
    /// sorted by |distance|: per record the kNearestOperands nearest and kLatestOperands latest
    std::vector<DistanceRow> distances;
    std::map<int64_t, int64_t> operand_totals;  ///< evidence id → all its operand rows
    std::vector<DispatchRow> dispatches;     ///< newest first
    /// When the member streams logged no dispatch: what other streams' operands say about each
    /// member record's address (schema/context_stream.h), and the context the dispatches and
    /// context operands came from (the fault address's record's, else the first chosen).
    std::map<int64_t, ContextMatch> context;
    std::optional<ContextStream> dispatch_context;
    /// the last kernel before the fault (lastKernelOf() over the incident's last
    /// kLastKernelWindow dispatches, whatever `dispatches` keeps): what `faults` decides too
    std::optional<LastKernel> last;
    std::vector<AllocationDistanceRow> allocations;  ///< preload shim, by |distance|
    /// recordings in the store the fault did not meet, and why (one line each in `show` and
    /// `report`)
    std::vector<AllocationMiss> misses;
};

/// Loads incident `id`; nullopt (and a message on stderr) when it does not exist or the store
/// fails. `missing` is set when the id does not exist (exit 1 rather than 2).
std::optional<IncidentView> loadIncident(db::Db& d, int64_t id, int dispatches, bool& missing);

/// The evidence record as `events --json` prints it (id, source, contract fields).
nlohmann::json evidenceJson(const StoredEvidence& s);

/// The fault address `show`, `report` present: an exact address a member record states (the
/// incident's own first, else another's: ROCr's byte beside the kernel's page), else the
/// incident's address as approximate (`address_exact` false: amdgpu's page, ROCr's "(may not be
/// exact address)", the debug agent's masked `0x…xxx`). nullopt when no record states one.
struct FaultAddress {
    uint64_t address = 0;
    bool exact = true;        ///< false: a page or masked address, the byte itself unknown
    int64_t evidence_id = 0;  ///< the record stating it
};
std::optional<FaultAddress> faultAddress(const IncidentView& v);

/// "0x…  2 MiB aligned: …" for an exact address; "page 0x… (exact byte unknown)" otherwise (no
/// alignment claim: the low bits are not known).
std::string faultAddressText(const FaultAddress& a);

/// The dispatch context of another stream that `show` and `report` print: the stream, process
/// and operand its dispatches and operands come from, or the candidates when two or more place
/// the fault address; empty when neither.
std::string dispatchContextText(const IncidentView& v);

/// Distances of the record faultAddress() names only (one row per operand).
std::vector<DistanceRow> primaryDistances(const IncidentView& v);
/// The shim's allocations measured from that same record, nearest first.
std::vector<AllocationDistanceRow> primaryAllocations(const IncidentView& v);

}  // namespace gpufault::cli
