// Read side of the store: every question the CLI asks, as a function returning plain rows.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectors/common/evidence.h"
#include "schema/sqlite.h"
#include "schema/store.h"

namespace gpufault {

struct ContextStream;  // schema/context_stream.h

/// An evidence row with its store id and source path.
struct StoredEvidence {
    int64_t id = 0;
    int64_t source_id = 0;
    std::string source;
    Evidence e;
    /// the instant of e.time.wall the store derived at ingest (µs since the epoch) and how:
    /// stated | local | local_ambiguous (docs/evidence.md "Wall time"); unset without one
    std::optional<int64_t> wall_utc_us;
    std::optional<std::string> wall_zone;
};

/// Filters for `events` (all optional).
struct EvidenceFilter {
    std::optional<std::string> kind;
    /// path as given to ingest, or a trailing part of it; "-": every stdin stream (`-#N`)
    std::optional<std::string> source;
    std::optional<int64_t> incident;    ///< members and context of one incident
    std::optional<int64_t> after_id;    ///< only records stored after this id (`watch`)
    bool with_text = true;              ///< false: raw is left empty, attrs hold only `journal_pid`
};

/// Evidence ordered by source (first ingest first) then line.
db::Result<std::vector<StoredEvidence>> queryEvidence(db::Db& d, const EvidenceFilter& f = {});

struct OperandRow {
    int64_t id = 0;
    std::string source;
    Operand o;
    std::optional<std::string> dispatch_kernel;
};
/// Operands ordered by source then line.
db::Result<std::vector<OperandRow>> queryOperands(db::Db& d);

struct DispatchRow {
    int64_t id = 0;
    std::string source;
    Dispatch d;
};
/// Stored dispatch rows (the windows kept before faults and at stream ends).
db::Result<std::vector<DispatchRow>> queryDispatches(db::Db& d);

struct KernelCountRow {
    std::string kernel;
    std::optional<int64_t> pid;
    std::string source;
    int64_t n = 0;
    int64_t first_line = 0, last_line = 0;
};
db::Result<std::vector<KernelCountRow>> queryKernelCounts(db::Db& d);

struct IncidentRow {
    int64_t id = 0;
    std::string kind;
    std::optional<std::string> vendor;
    std::optional<uint64_t> address;
    std::optional<int64_t> pid;
    std::optional<std::string> process;
    std::optional<std::string> reason;
    std::optional<std::string> kernel;
    std::string signature;
    int64_t members = 0;
    std::string source;  ///< source of the first record
    int64_t line = 0;    ///< line of the first record
    std::string kinds;   ///< member kinds, comma-separated
};
db::Result<std::vector<IncidentRow>> queryIncidents(db::Db& d,
                                                    std::optional<int64_t> id = std::nullopt);

struct IncidentMemberRow {
    StoredEvidence ev;
    std::string role, link;
};
db::Result<std::vector<IncidentMemberRow>> queryIncidentMembers(db::Db& d, int64_t incident);

/// One row of view fault_operand_distance.
struct DistanceRow {
    int64_t evidence_id = 0;
    OperandRow op;
    uint64_t address = 0;
    /// bytes: <0 below ptr, 0 inside, >=0 at/above end; none when |distance| ≥ 2^63 (refused,
    /// schema/distance.h; `below` tells the side)
    std::optional<int64_t> distance;
    std::optional<int64_t> from_ptr;  ///< address - ptr (none when outside int64)
    bool below = false, inside = false, same_2mib = false;
    std::optional<int64_t> rank_in_time;
    /// the operand was logged after the fault, in the fault's own stream (its line is later)
    bool after_fault = false;
};
/// Distances from the fault records of an incident to every operand of their processes and
/// ranks (an operand and a fault stating different `[rankN]:` ranks are not paired): those
/// of the fault's own stream, and those of the incident's other member streams (rank_in_time
/// null: lines of different streams do not order). Distances are computed here from the stored
/// address, ptr and end in unsigned arithmetic (exact for every 64-bit address), ordered with
/// the operands logged after the fault last, then by |distance| (refused ones last), then by
/// rank in time (those without one last), then by operand line. Per fault record only the
/// `nearest` first in that order and the `latest` with the highest rank in time (1, the last
/// logged before the fault, first) are kept while the rows stream (memory flat in the operand
/// count); `totals`, when given, receives each record's full row count. `context`: for member
/// records (by id) whose streams logged no dispatch, the dispatch context whose operands are
/// measured too (as another member stream's: no rank in time).
db::Result<std::vector<DistanceRow>> queryIncidentDistances(
    db::Db& d,
    int64_t incident,
    size_t nearest = SIZE_MAX,
    size_t latest = 0,
    std::map<int64_t, int64_t>* totals = nullptr,
    const std::map<int64_t, ContextStream>* context = nullptr);

/// The last `limit` dispatches before each member record of an incident (same stream, process
/// and rank: a dispatch and a record stating different pids or ranks do not meet), newest
/// first.
db::Result<std::vector<DispatchRow>> queryIncidentDispatches(db::Db& d,
                                                             int64_t incident,
                                                             int limit);

/// One fault record with the answers `gpufault faults` prints.
struct FaultRow {
    StoredEvidence ev;
    std::optional<int64_t> incident;
    /// operand name nearest by |distance| among those of its process and rank logged before
    /// the fault in its stream; only when there is none, the nearest logged after it
    std::optional<std::string> nearest;
    std::optional<int64_t> nearest_distance;  ///< bytes (see DistanceRow)
    bool nearest_inside = false;
    bool nearest_after = false;  ///< `nearest` was logged after the fault
    /// last ShaderName before it, same stream, process and rank (lastKernelOf() over
    /// queryLastKernels()); unset when none was dispatched or when it is ambiguous
    std::optional<std::string> last_kernel;
    /// ambiguous last kernel: (pid, kernel) of each process that dispatched just before the
    /// fault, newest first (LastKernel::by_process); empty otherwise
    std::vector<std::pair<int64_t, std::string>> kernel_candidates;
};
/// Fault-kind records (amdgpu, ROCr, Xid, sanitizer, CPU segfault, core) in evidence order.
/// The last kernel dispatched before a fault, from an incident's dispatches (newest first, as
/// queryIncidentDispatches() returns them): the newest dispatch's kernel, and `by_process`, the
/// last kernel of each pid that dispatched in that stream close to it (runtime clocks within
/// 2 s, else within 50 lines), newest first. Two or more: ambiguous — the fault states no pid,
/// so any of those processes may have run the faulting kernel (docs/correlation.md).
struct LastKernel {
    std::string kernel;
    std::vector<std::pair<int64_t, std::string>> by_process;  ///< (pid, kernel), newest first
    bool ambiguous() const { return by_process.size() > 1; }
};
std::optional<LastKernel> lastKernelOf(const std::vector<DispatchRow>& newestFirst);

/// Dispatch rows lastKernelOf() is given, whatever `show --dispatches` displays: the kept
/// window per thread (docs/correlation.md), so `faults`, `show`, `report` and the signature
/// decide from the same rows.
constexpr int kLastKernelWindow = 64;

/// lastKernelOf() for each record in `evidence` (ids): the last kLastKernelWindow dispatches
/// before it in its stream, of its process and rank (as queryIncidentDispatches() pairs them).
/// A record with no dispatch there but an address takes the last dispatches of its dispatch
/// context, when one stream and process of another stream places the address (context_stream.h);
/// `contexts`, when given, receives those contexts by record (also those without dispatches:
/// their operands are the record's). Records with neither are absent
/// from the map. One prepared statement, an index range per record.
db::Result<std::map<int64_t, LastKernel>> queryLastKernels(
    db::Db& d,
    const std::vector<int64_t>& evidence,
    std::map<int64_t, ContextStream>* contexts = nullptr);

db::Result<std::vector<FaultRow>> queryFaults(db::Db& d);

/// Record counts for metrics: evidence by (kind, GPU) and incidents by (kind, signature).
/// `gpu` is the PCI address, else "node-N", else "" (a record that names no GPU).
struct CountRow {
    std::string kind;
    std::string label;  ///< gpu or signature
    int64_t n = 0;
};
db::Result<std::vector<CountRow>> queryEvidenceByGpu(db::Db& d);
/// The highest evidence id (0 for an empty store).
db::Result<int64_t> maxEvidenceId(db::Db& d);
/// The highest evidence id any incident holds (0: none): below maxEvidenceId(), the incidents
/// may be older than the last records (a correlation was interrupted).
db::Result<int64_t> maxIncidentEvidenceId(db::Db& d);
db::Result<std::vector<CountRow>> queryIncidentsBySignature(db::Db& d);

/// A run with its id and the number of records its captured output produced.
struct RunRow {
    int64_t id = 0;
    RunRecord run;
    int64_t evidence = 0;
};
/// Runs, oldest first (`id` set: that one only).
db::Result<std::vector<RunRow>> queryRuns(db::Db& d, std::optional<int64_t> id = std::nullopt);

/// A stored process snapshot with its modules.
struct ProcessRow {
    int64_t id = 0;
    ProcessRecord p;
};
/// Snapshots, oldest first; `incident` set: those taken for that incident's member records.
db::Result<std::vector<ProcessRow>> queryProcesses(db::Db& d,
                                                   std::optional<int64_t> incident = std::nullopt);

/// What the store knows about one GPU's recent trouble, for `preflight`.
struct DeviceHistory {
    int64_t faults = 0;  ///< page faults, Xids, ring timeouts and failed resets after the baseline
    std::optional<StoredEvidence> last_fault;
    std::optional<StoredEvidence> last_good_reset;  ///< the baseline, when there is one
};
/// Records naming PCI device `pci` after its last successful GPU reset: in the reset's own log,
/// those of later lines; in other logs, those stored after it. "Last" (the reset, `last_fault`)
/// is the last line of the log stored last: within one log the id is not line order (a held
/// record is stored after the records of later lines).
db::Result<DeviceHistory> queryDeviceHistory(db::Db& d, const std::string& pci);

/// A generic table for `gpufault query`: column names and rows of printable values.
struct Table {
    std::vector<std::string> columns;
    std::vector<std::vector<std::optional<std::string>>> rows;
    std::vector<std::vector<int>> types;  ///< SQLITE_INTEGER/FLOAT/TEXT/NULL per cell
};
/// Runs exactly one read-only statement (the connection must be read-only); several statements,
/// a statement that writes (`VACUUM INTO`, `ATTACH`, …) and one running past `timeout_s`
/// seconds are errors. Other errors are SQLite's.
db::Result<Table> runQuery(db::Db& d, const std::string& sql, double timeout_s = 60);

}  // namespace gpufault
