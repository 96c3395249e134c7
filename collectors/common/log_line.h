// A decoded log line (prefixes stripped) and the Matcher interface every text parser implements.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/evidence.h"

namespace gpufault {

/// Where a line came from, as far as its prefixes tell.
enum class Origin {
    Unknown,  ///< no prefix that says (plain program output, bare kernel text, ...)
    Kernel,   ///< dmesg stamp, kmsg record, journald/syslog `kernel:` tag
    Other,    ///< journald/syslog line of another identifier (systemd-coredump, python3[42], ...)
};

/// One logical line after the line decoder removed every transport and logger prefix
/// (dmesg/journald/syslog stamps, kmsg header, Docker/CRI/compose wrappers, `> ` quotes,
/// `[rankN]:`, AMD_LOG_LEVEL prefix). `text` and `raw` point into buffers owned by the decoder
/// and are valid only during the Matcher::feed call.
struct LogLine {
    uint64_t line = 0;      ///< 1-based physical line in the source
    std::string_view text;  ///< message text, no trailing CR/LF/`^M`
    std::string_view raw;   ///< the physical line as read (without newline)
    TimeInfo time;          ///< kernel_s / wall / runtime_us from the prefixes
    Origin origin = Origin::Unknown;
    /// the process of the line within its stream: `[rankN]:`, torchrun's `[defaultN]:`, vLLM's
    /// `(VllmWorker rank=N pid=P)`, or a compose service's serviceRank() (prefix/program_prefix.h)
    std::optional<int64_t> rank;
    std::string_view ident;  ///< journald/syslog identifier (`kernel`, `python3`), "" if none
    std::optional<int64_t> ident_pid;  ///< journald/syslog `ident[PID]`
    // AMD_LOG_LEVEL prefix (`:3:rocvirtual.cpp :3190: 0043127734 us: [pid:42 tid:0x..] msg`).
    std::optional<int> amd_level;    ///< the `:N:` level, set iff the AMD log prefix was present
    std::optional<int64_t> log_pid;  ///< pid from `[pid:N tid:..]` or `N : [tid:..]`
    std::string_view runtime_tid;    ///< `0x7f..` from `tid:0x..` / `tid: 0x..`, "" if none
};

/// LogLine::rank values from here up are no rank but the identity of a process that states
/// none: a docker compose service replica, a vLLM worker without `rank=` (prefix::serviceRank()).
constexpr int64_t kIdentityRankBase = int64_t{1} << 40;

/// The rank a line or record states (EVIDENCE.md `rank`, "the distributed rank when the line
/// carried a `[rankN]:` prefix"): `r`, or nullopt for a process identity (kIdentityRankBase up),
/// which stays in the store to keep two services' records apart but is not printed as a rank.
inline std::optional<int64_t> statedRank(std::optional<int64_t> r) {
    return r && *r < kIdentityRankBase ? r : std::nullopt;
}

/// Bytes of the record's text kept in Evidence::raw.
constexpr size_t kMaxRaw = 4096;

/// Appends `line` to a record's raw text ('\n'-joined), keeping at most kMaxRaw bytes: the one
/// rule every multi-line record's raw follows.
inline void appendRawLine(std::string& raw, std::string_view line) {
    if (raw.size() >= kMaxRaw) return;
    if (!raw.empty()) raw.push_back('\n');
    raw.append(line.substr(0, kMaxRaw - std::min(raw.size(), kMaxRaw)));
}

/// Stamps a one-line record with where and when `l` says it happened: line, time, rank, and
/// raw (the physical line, else the text; first kMaxRaw bytes).
inline void stampFromLine(Evidence& e, const LogLine& l) {
    e.line = l.line;
    e.time = l.time;
    e.rank = l.rank;
    std::string_view raw = l.raw.empty() ? l.text : l.raw;
    e.raw = std::string(raw.substr(0, kMaxRaw));
}

/// Lines after its first line within which identical records fold into one record (`count`):
/// a record held for folding is emitted, with its count so far, before the line kFoldLines
/// after its first line is matched (TextPipeline), half the line positions a checkpoint
/// remembers (StreamIngest), so a fold never holds a stream's resume point further back.
constexpr uint64_t kFoldLines = 32768;

/// True for a record that a process prints once, because it dies of the fault
/// (docs/correlation.md "Contradictions"): `rocr_memory_fault` (ROCr aborts after printing one),
/// `nvidia_xid` and `cpu_segfault` with an address. A fold of identical runtime errors
/// (kFoldLines) never spans one of these of its process.
inline bool endsProcess(const Evidence& e) {
    return e.kind == Kind::RocrMemoryFault ||
           ((e.kind == Kind::NvidiaXid || e.kind == Kind::CpuSegfault) && e.address);
}

/// A parser for one producer format. Fed every decoded line of one stream in order; keeps only
/// bounded state (a block in progress). Pure: no I/O, no globals.
class Matcher {
  public:
    virtual ~Matcher() = default;
    /// Parse one line; emit finished records to `out`.
    virtual void feed(const LogLine& line, Sink& out) = 0;
    /// End of stream: emit any block in progress (cut blocks keep what they have).
    virtual void finish(Sink& out) { (void)out; }
    /// The stream went quiet (gpufaultd: no line for 200 ms; more may come): emits what
    /// finish() emits, except that the records held for folding are only published (a copy
    /// with the count so far) and stay held, so later repeats still fold into them. Folds
    /// close at the same lines in every reader, whatever the timing: kFoldLines after their
    /// first line, at a process-ending fault (closeProcess()), at the stream's end.
    virtual void quiet(Sink& out) { finish(out); }
    /// The line where the oldest block still in progress started, nullopt when none is open.
    /// An interrupted ingest resumes there, so no block loses its header.
    virtual std::optional<uint64_t> openSince() const { return std::nullopt; }
    /// The first line of context not yet attached to a record (a launch's `ArgN` lines before
    /// its `ShaderName`), nullopt when none. An interrupted ingest resumes there when that line
    /// is still among the positions it remembers (like a held dispatch), else the context is lost.
    virtual std::optional<uint64_t> contextSince() const { return std::nullopt; }
    /// True when no line can change this matcher's state except by being one of its records
    /// (no block in progress, nothing waiting for a next line). Default: nothing open.
    virtual bool idle() const { return !openSince(); }
    /// The first line of the records held only so that later identical ones fold into them
    /// (`count`), nullopt when none (also part of openSince()). A stream closes such a record
    /// kFoldLines after its first line (closeFolded()), so it never holds a resume longer.
    virtual std::optional<uint64_t> foldedSince() const { return std::nullopt; }
    /// Emits the records held for folding whose first line is before `before`, with their
    /// count so far; a later identical record starts a new one. May defer (a record still being
    /// completed): foldedSince() then still reports it.
    virtual void closeFolded(uint64_t before, Sink& out) {
        (void)before;
        (void)out;
    }
    /// A record that ends a process (Matcher::endsProcess()) at line `at`, with its pid and rank
    /// (nullopt: none stated), was emitted: emits the records held for folding that it may
    /// concern (first line before `at`; same pid or either pid-less, same rank or either
    /// rank-less), so a repeat after it starts a new record. Called by TextPipeline right after
    /// the matcher that emitted it was fed (or finished), before any later line reaches this one.
    virtual void closeProcess(uint64_t at,
                              std::optional<int64_t> pid,
                              std::optional<int64_t> rank,
                              Sink& out) {
        (void)at;
        (void)pid;
        (void)rank;
        (void)out;
    }
    /// The first line of a record closeFolded() emitted whose repeats span `line` (its first
    /// line < `line` <= its last repeat's line), nullopt when none: a stream resumed at `line`
    /// would count the repeats it reads again into a second record, so it resumes there.
    virtual std::optional<uint64_t> closedFoldAround(uint64_t line) const {
        (void)line;
        return std::nullopt;
    }
    /// True for parsers of kernel-log records only (amdgpu faults, resets, Xid, CPU faults): a
    /// line with an AMD_LOG_LEVEL prefix (LogLine::amd_level: ROCclr's log_printf printed it)
    /// is never one of their records, so the pipeline skips it for them while they are idle().
    virtual bool kernelLogOnly() const { return false; }
    /// True for the parser that owns HIP's dispatch-context messages (`ArgN: … = …`,
    /// `ShaderName : …`, `Graph shader name : …` after an AMD_LOG_LEVEL prefix): they are no
    /// other parser's records, so the pipeline skips them for the others while those are idle().
    virtual bool ownsDispatchLines() const { return false; }
};

}  // namespace gpufault
