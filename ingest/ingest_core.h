// Ingest of one core file: read (collectors/coredump), then its `coredump` record, its threads,
// frames and mapped files stored in one transaction with the source's checkpoint.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "collectors/common/evidence.h"
#include "collectors/coredump/core_reader.h"
#include "ingest/core_fingerprint.h"
#include "schema/core_queries.h"
#include "schema/store.h"

namespace gpufault {

/// What one core ingest did.
struct CoreIngestSummary {
    std::string path;
    int64_t core_id = 0;
    bool unchanged = false;  ///< this core was already stored: nothing read
    /// The same core (same content) already stored from another path: "core N from PATH"
    /// (with `unchanged`); nothing stored, no incident.
    std::optional<std::string> same_as;
    /// This core replaced one of the same crash stored before (a cut copy, a journal entry's
    /// or a report's head without the core): the store holds one core for both.
    bool replaced = false;
    std::string kind;        ///< cpu | rocr_gpu | cuda_gpu
    size_t threads = 0;
    size_t frames = 0;      ///< frames of the crashing thread
    std::string signature;  ///< stack signature, "" for GPU cores
    std::string top;        ///< the first frame that is not generic (describeFrame)
    /// Why the stack is partial: "unwind limit reached after N of M threads (S s)".
    std::optional<std::string> partial;
    size_t operands = 0;    ///< CUDA GPU cores: pointer arguments stored as operands
    double seconds = 0;
    /// Fields of the producer's report stored as unknown because they were impossible
    /// ("Signal: 99999 is not a signal (1..64): stored as unknown").
    std::vector<std::string> warnings;
};

/// What the producer of a core said beside it (systemd-coredump's journal entry or file name,
/// apport's report); it overrides what the core's notes say where both speak.
struct CoreProvenance {
    std::string origin = "file";      ///< file | systemd-coredump | apport
    std::optional<std::string> note;  ///< "core not kept: size limit", …
    std::optional<std::string> exe;
    std::optional<int64_t> time;  ///< the crash, UTC seconds (replaces the file's mtime)
    std::string time_from;        ///< where `time` came from: "journal", "file name", …
    std::optional<int64_t> pid;   ///< the host's pid (a core's notes hold the namespace's)
    std::optional<std::string> comm;
    std::optional<int> signal;
    std::optional<int64_t> uid;
    std::optional<std::string> path;  ///< where the core is kept (the compressed file)
    std::optional<int64_t> size;      ///< its size in bytes
    /// fileCoreFingerprint() of the uncompressed core (CoreRecord::content_fingerprint).
    std::optional<std::string> content_fingerprint;
    bool replace = false;             ///< drop the core the source holds first (Store::dropCoreOf)
    /// A stored core of the same crash, cut (prefixStoredCore()): its source's rows are dropped
    /// in the same transaction, this more complete core's frames win.
    std::optional<PrefixCore> supersedes;
    /// The core of the same crash stored from another source, which this one replaces: the
    /// same content (sameStoredCore(): the raw core, apport's CoreDump) stored before a journal
    /// entry of it, or an apport report stored without its CoreDump. Its source's rows are
    /// dropped in the same transaction, this one stored in its place.
    std::optional<PrefixCore> takes_over;
    nlohmann::json meta = nlohmann::json::object();  ///< merged into cores.meta
};

/// How far apart, in seconds, a core file's mtime and the time a systemd-coredump entry or
/// apport report gives may be for the two to be one crash (with the same pid, signal and
/// command): writing a large core takes minutes.
inline constexpr int64_t kSameCrashWindow = 600;

/// Whether two stacks of a crashing thread disagree at the top: one of their first frames (up
/// to 3, while both have a module offset) names another module (file name) or offset. A
/// journal entry's text stack and the unwound core of the same crash agree.
bool crashTopsDisagree(const std::vector<coredump::Frame>& a,
                       const std::vector<coredump::Frame>& b);

/// The stored core of the crash of `pid`, `signal` and `process` (queryCoresOfEntryCrash(),
/// `with_file` as there) whose time is within kSameCrashWindow of `time` (UTC s), whose
/// crashing thread's top frames do not disagree with `frames`, and whose executable agrees:
/// an entry's executable (`exe`, or the stored entry's) is among the files the core maps
/// (`mapped`, or the stored core's), by file name. Nullopt when none. Two crashes of one pid,
/// command and executable at one time are one crash; a copied core (its mtime the copy's) is
/// not matched, rather than risk making two crashes one.
db::Result<std::optional<EntryCrashCandidate>> findCoreOfCrash(
    db::Db& d,
    int64_t pid,
    int64_t signal,
    const std::string& process,
    int64_t time,
    const std::vector<coredump::Frame>& frames,
    bool with_file,
    const std::optional<std::string>& exe,
    const std::vector<std::string>& mapped);

/// The `coredump` record of a CUDA GPU core (pure): the pid and time of its file name, the
/// grids it holds (the first 8 named in its text, then how many more), and the first warp a CUDA
/// exception stopped (reason `CUDA GPU core: Warp Illegal Address`, attrs exception, exception_pc,
/// exception_warps); nullopt when the file name names no pid.
std::optional<Evidence> cudaCoreEvidence(const coredump::CoreReport& r, const std::string& wall);

/// The `coredump` record of a ROCr GPU core (pure): pid from its name, no reason, attrs
/// gpu_core `rocr` and target (`gfx90a`), so that it joins the incident of that pid; nullopt
/// without a pid.
std::optional<Evidence> rocrCoreEvidence(const coredump::CoreReport& r, const std::string& wall);

/// Operands from a CUDA GPU core's pointer arguments (pure): `KERNEL.argN` (dtype the
/// parameter's type) when the core's cubin names the kernel, else `param+0xOFF`; from the pointer
/// to the next pointer argument in the same dumped device-memory region or the region's end,
/// whichever comes first (an upper bound of the buffer); origin `cuda_param`.
std::vector<Operand> cudaParamOperands(const coredump::CoreReport& r);

/// Stores a report read (perhaps from a decompressed copy) as source `id` with `prov`: its
/// `coredump` record, the core, its operands, the source marked complete. `own_txn`: in a
/// transaction of its own, else in the caller's open one. A core already stored for the
/// source is kept (its id returned).
db::Result<CoreIngestSummary> storeCoreReport(Store& store,
                                              const SourceIdentity& id,
                                              const coredump::CoreReport& report,
                                              const CoreProvenance& prov,
                                              bool own_txn);

/// Local `YYYY-MM-DDTHH:MM:SS` of UTC seconds `t` (the wall time records carry).
std::string localWall(int64_t t);

/// The `coredump` record of a CPU core (pure): pid, comm, crashing tid, si_addr as the address,
/// the signal as the reason, frame #0's module and offset (what the kernel's segfault line
/// prints), and attrs `signal`, `si_code`, `stack` (signature), `frame` (first non-generic
/// frame), `threads`. `wall` is the core's time as local `YYYY-MM-DDTHH:MM:SS`.
Evidence coreEvidence(const coredump::CoreReport& r, const std::string& wall);

/// The rows of the core tables for a report (pure; mapped files folded to one row per path).
CoreRecord coreRecord(const coredump::CoreReport& r);

/// The warning of a core stored in place of core `core` (read from `path`) of the same crash.
std::string replacedCoreWarning(int64_t core, const std::string& path);

/// Test seams of ingestCore (empty in production, where the same code runs).
struct CoreIngestHooks {
    /// Runs once the file is open and its identity (fstat, first 4 KiB) read, before its
    /// content is fingerprinted and read: a test renames another file over the path here.
    std::function<void()> after_open;
};

/// Reads and stores the core at `path` (the path as given: it is stored as the source path;
/// the cores table keeps its absolute form). A core already stored (same device, inode,
/// first 4 KiB and size) is not read again. Errors name the file; nothing is stored then.
/// `own_txn` false: written into the caller's open transaction (the daemon's).
db::Result<CoreIngestSummary> ingestCore(Store& store,
                                         const std::string& path,
                                         const coredump::ReadOptions& opt = {},
                                         bool own_txn = true,
                                         const CoreIngestHooks& hooks = {});

}  // namespace gpufault
