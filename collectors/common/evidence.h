// Evidence, dispatch and operand records: what every parser produces.
// The field names follow ../../docs/evidence.md (the contract of `gpufault events --json`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpufault {

/// The kinds of evidence (EVIDENCE.md "Kinds"). The string form is the `kind` field.
enum class Kind {
    AmdgpuPageFault,
    RocrMemoryFault,
    HsaQueueError,
    RuntimeError,
    NvidiaXid,
    SanitizerReport,
    CpuSegfault,
    MissingCodeObject,
    AllocFailure,
    GpuReset,
    Coredump,  ///< a core file of a process that died of a signal (collectors/coredump)
};

/// `amdgpu_page_fault`, `rocr_memory_fault`, ... for a kind.
std::string_view kindName(Kind k);
/// The kind for a name; nullopt for an unknown name.
std::optional<Kind> kindFromName(std::string_view name);
/// True for kinds that open incidents (EVIDENCE.md "Which records open incidents").
bool opensIncident(Kind k);

/// Why a stamp of a known form gave no TimeInfo::wall: its date or time does not exist
/// (`2026-13-01`, `Feb 30`, `25:00`: Date) or it states a zone offset no zone uses (`+15:00`,
/// `+0060`: Zone). The store keeps no wall time for such a record and warns, naming its file
/// and line.
enum class WallRefusal : uint8_t { None, Date, Zone };

/// What a line says about time. Any subset may be set.
struct TimeInfo {
    std::optional<double> kernel_s;  ///< seconds since boot: `[ 4778.915423]`, kmsg usec / 1e6
    std::optional<std::string>
        wall;  ///< `YYYY-MM-DDTHH:MM:SS` or `MM-DDTHH:MM:SS`-less forms as printed
    /// The instant of `wall`, seconds since the Unix epoch, when the record states its zone
    /// (`Z`, `+02:00`, `+0200`, an epoch stamp such as journald's `__REALTIME_TIMESTAMP`) or
    /// the producer knows it (a core's time); nullopt: no zone stated (the store then reads a
    /// full date in the ingesting machine's zone, docs/evidence.md "Wall time").
    std::optional<int64_t> wall_utc_s;
    std::optional<int64_t> runtime_us;  ///< AMD_LOG_LEVEL monotonic stamp, microseconds
    /// The line's wall-clock stamp was refused (then `wall` is nullopt): why.
    WallRefusal wall_refused = WallRefusal::None;

    bool empty() const { return !kernel_s && !wall && !runtime_us; }
};

/// One thing a producer reported (one amdgpu block, one ROCr line, one Xid line, ...).
/// A field the text does not state stays nullopt: never guessed, never defaulted.
struct Evidence {
    Kind kind = Kind::RuntimeError;
    std::optional<std::string> vendor;  ///< "amd" | "nvidia"
    uint64_t line = 0;                  ///< 1-based line where the record starts
    TimeInfo time;
    std::optional<uint64_t> address;  ///< fault address (normalised, see evidence.md)
    std::optional<bool> address_exact;
    std::optional<std::string> pci;   ///< DDDD:BB:DD.F
    std::optional<int64_t> gpu_node;  ///< ROCr "GPU node-N"
    std::optional<int64_t> pid;
    std::optional<std::string> process;
    std::optional<int64_t> tid;  ///< kernel thread id only
    std::optional<std::string> thread;
    std::optional<std::string>
        runtime_tid;  ///< AMD_LOG_LEVEL `tid:0x...` handle (not a kernel tid)
    std::optional<int64_t> vmid;
    std::optional<int64_t> pasid;
    std::optional<std::string> hub;
    std::optional<bool> retry;
    std::optional<std::string> client;
    std::optional<int64_t> status;
    std::optional<std::string> access;  ///< "read" | "write" | "execute"
    std::optional<std::string> reason;
    std::optional<int64_t> xid;
    std::optional<std::string> kernel;
    std::optional<std::string> module;
    std::optional<uint64_t> module_offset;
    std::optional<int64_t> rank;
    std::string raw;     ///< the record's text as read (first 4 KiB)
    uint32_t count = 1;  ///< identical records folded into this one
    /// Further producer fields, kept as strings (e.g. "ring", "src_id", "ih_client",
    /// "die", "access_size", "nearest_alloc", "nearest_alloc_size", "callbacks_suppressed").
    std::vector<std::pair<std::string, std::string>> attrs;

    /// Adds `key=value` to attrs (replacing an existing key).
    void setAttr(std::string key, std::string value);
    /// The attr value or nullopt.
    std::optional<std::string_view> attr(std::string_view key) const;
};

/// One pointer argument of a dispatch: HIP `ArgN: type name = ptr:0x... obj:[lo-hi]`.
struct DispatchArg {
    int index = 0;
    std::string name;  ///< the parameter name as logged ("" when the log shows none)
    uint64_t ptr = 0;
    std::optional<uint64_t> obj_lo;  ///< allocation start
    std::optional<uint64_t> obj_hi;  ///< allocation end (exclusive)
};

/// One kernel dispatch (`ShaderName : NAME`) with the argument lines logged before it.
struct Dispatch {
    uint64_t line = 0;
    TimeInfo time;
    std::optional<int64_t> pid;
    std::string runtime_tid;  ///< AMD log tid handle, "" when the layout has none
    /// distributed rank of the line's `[rankN]:` prefix (torchrun merges every rank's output
    /// into one stream): a fault of another stated rank never takes this dispatch as context
    std::optional<int64_t> rank;
    std::string kernel;  ///< ShaderName as printed (mangled)
    std::vector<DispatchArg> args;
    /// Pointer argument lines not parsed yet, after `args` (the encoding of
    /// collectors/common/dispatch_args.h; resolveArgs() parses them into `args`). Only a sink
    /// whose takesPendingArgs() is true receives them; other sinks get them parsed.
    std::string pending_args;
    /// The first line of its launch: its first `ArgN` line, or `line` when it has none (a
    /// resumed ingest must re-read from here to rebuild the arguments).
    uint64_t context_line = 0;
};

/// A recorded buffer near a fault: a probe line, a canonical `gpufault.operand` line, or a HIP
/// argument's allocation. [ptr, end) in bytes.
struct Operand {
    uint64_t line = 0;
    TimeInfo time;
    std::optional<int64_t> pid;
    std::string name;
    uint64_t ptr = 0;
    uint64_t end = 0;                 ///< exclusive
    std::optional<uint64_t> arg_ptr;  ///< for HIP args: the pointer passed (inside [ptr,end))
    std::optional<std::string> shape, stride, dtype;
    std::string origin;  ///< "probe" | "canonical" | "hip_arg"
    std::optional<int64_t> rank;
};

/// A problem with the input that did not stop parsing (cut block, over-long line, ...).
struct Warning {
    uint64_t line = 0;
    std::string message;
};

/// Where parsers deliver their records. Implemented by the ingest pipeline and by tests.
class Sink {
  public:
    virtual ~Sink() = default;
    virtual void evidence(Evidence&& e) = 0;
    virtual void dispatch(Dispatch&& d) = 0;
    virtual void operand(Operand&& o) = 0;
    virtual void warning(Warning&& w) = 0;
    /// A record `e` (at e.line) is held, to be emitted later through evidence() (folded
    /// repeats go out at the end of the stream, in gpufaultd when the stream goes quiet): a sink
    /// that keeps context before a record's line (dispatch windows) takes it now, as evidence()
    /// of `e` would, so that what it keeps does not depend on when `e` is emitted. The default
    /// does nothing.
    virtual void context(const Evidence& e) { (void)e; }
    /// The output says one run of a program ended or another began at line `line` (with the
    /// line's rank; compute-sanitizer's `========= ERROR SUMMARY:` and its
    /// `========= COMPUTE-SANITIZER` banner): records held for folding before it are closed
    /// there (Matcher::closeProcess()), so one run's repeats never count into another's. The
    /// default does nothing.
    virtual void runBoundary(uint64_t line, std::optional<int64_t> rank) {
        (void)line;
        (void)rank;
    }
    /// True when dispatch() takes Dispatch::pending_args unparsed (the sink parses them when it
    /// needs the values); false (the default): producers parse them into `args` first.
    virtual bool takesPendingArgs() const { return false; }
};

/// A Sink that keeps everything in vectors (tests, small tools).
class CollectSink : public Sink {
  public:
    std::vector<Evidence> evidences;
    std::vector<Dispatch> dispatches;
    std::vector<Operand> operands;
    std::vector<Warning> warnings;
    void evidence(Evidence&& e) override { evidences.push_back(std::move(e)); }
    void dispatch(Dispatch&& d) override { dispatches.push_back(std::move(d)); }
    void operand(Operand&& o) override { operands.push_back(std::move(o)); }
    void warning(Warning&& w) override { warnings.push_back(std::move(w)); }
};

}  // namespace gpufault
