// The Sink that writes parser output to the store, keeping dispatch context windows.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collectors/common/evidence.h"
#include "ingest/ingest.h"
#include "schema/store.h"

namespace gpufault {

/// StoreSink's flood rule: its span and short window (docs/architecture.md "Storing").
struct FloodRule {
    /// Lines (of the stream) after a fault within which the next fault is a flood's: about
    /// 0.13 s of a log written at 500 k lines/s, minutes of a quiet one.
    uint64_t lines = 65536;
    /// Dispatches written per window for a flood's fault (at most the window itself).
    size_t window = 8;
};

/// True for the fault kinds the flood rule counts (StoreSink): memory faults whose record the
/// stream emits at its own line, so it arrives in the same order in `gpufault ingest` and in
/// gpufaultd: `rocr_memory_fault` (a split reason or the debug agent's block completes at the
/// next lines, in both alike), `nvidia_xid`, `cpu_segfault`. Not `amdgpu_page_fault` nor
/// `sanitizer_report` (multi-line blocks, emitted when the block ends), `runtime_error`,
/// `hsa_queue_error` and `missing_code_object` (no memory faults; folded runtime records are
/// emitted late: at the end of the stream, in gpufaultd when the stream goes quiet).
bool floodFaultKind(Kind k);

/// Writes records of one source into the open transaction of `store`. Dispatches are counted
/// per (process, kernel) in full; dispatch rows (and their argument operands) are kept only in
/// a window of the last N per (process, rank, runtime thread), written when a fault record
/// arrives (the N before the fault's line, even when a multi-line record is emitted a few lines
/// late) and at the end of the stream. A fault flushes the windows of its process and rank: not
/// those of another stated pid, nor of another stated `[rankN]:` (one stream holds every rank's
/// output under torchrun). Store errors are kept and reported by `error()`.
/// dispatch() takes the `kernel`, `args` and `pending_args` of its argument by swapping them with
/// those of an older held dispatch (`args` and `pending_args` come back empty, `kernel`
/// unspecified; `runtime_tid` is copied and left as it was), so a producer may reuse one
/// Dispatch and the capacity of its strings, setting those fields anew. Pending argument lines
/// are parsed only for the dispatches a window flush writes.
///
/// A flood of faults stores short windows (FloodRule): a fault record of a floodFaultKind() kind
/// that arrives less than `FloodRule::lines` lines after the previous such record of the
/// stream that flushes the same
/// window (same pid, or either names none; a window of dispatches naming no pid: any fault;
/// and likewise for the rank)
/// writes only the last `FloodRule::window` dispatches of that window. "Previous" is by arrival,
/// and known from the store for the lines a resumed stream does not read again
/// (resumeFaults()), so a resumed stream decides as one uninterrupted stream does.
class StoreSink final : public Sink {
  public:
    StoreSink(Store& store,
              int64_t source_id,
              int window,
              uint64_t count_after_line,
              IngestSummary& summary,
              FloodRule flood = FloodRule{});

    void evidence(Evidence&& e) override;
    void dispatch(Dispatch&& d) override;
    void operand(Operand&& o) override;
    void warning(Warning&& w) override;
    /// A record held by its matcher (folded runtime errors): its windows are written now, as
    /// evidence() writes them (not for floodFaultKind() kinds, emitted at their line), so that
    /// `gpufault ingest` (emitted at the end) and gpufaultd (emitted when the stream goes
    /// quiet) store the same dispatches though later ones have overwritten the ring since.
    void context(const Evidence& e) override;
    bool takesPendingArgs() const override { return true; }

    /// Line `line` was longer than the decoder keeps: records starting there get attr
    /// `truncated=1` (the last 64 such lines are remembered).
    void markTruncated(uint64_t line);

    /// Records starting at line `line` get attr `unended=1`: they hold what a last line without
    /// its newline said so far, and a value in it (an address) may be cut (the last 8 such
    /// lines are remembered).
    void markUnended(uint64_t line) {
        unended_.push_back(line);
        if (unended_.size() > 8) unended_.pop_front();
    }
    /// Dispatches at line `line` and after are not counted (a last line without its newline:
    /// its reader counts it once it is whole, SourceState::unended); their rows are kept.
    void uncountedFrom(uint64_t line) { countBefore_ = std::min(countBefore_, line); }
    /// Writes pending dispatch counts (call before each commit).
    void flushCounts();
    /// Writes every window (end of stream).
    void flushWindows();
    /// The line of the oldest dispatch still held (a resumed ingest re-reads from there so a
    /// later fault finds the same window), nullopt when none is held.
    std::optional<uint64_t> oldestHeldLine() const;
    /// A resumed stream reads again from line `first_line` (1-based): takes, from the store,
    /// the last fault record per pid of this source before it (within the flood span) as the
    /// fault records that arrived before. Call before the first record; a store error is kept
    /// (error()).
    void resumeFaults(uint64_t first_line);
    /// A resumed stream reads again from line `first_line`: loads into the windows the held
    /// dispatches the store keeps from before it (held_dispatches, written by persistHeld()),
    /// and drops, at the next persistHeld(), the kept ones from `first_line` on (they are read
    /// again). Call before the first record; a store error is kept (error()).
    void loadHeld(uint64_t first_line);
    /// Checkpoint that resumes at line `first_line`: writes every held dispatch before it not
    /// written yet (held_dispatches; a window that drops one or stores it updates its row), so a
    /// resumed stream holds what this one holds. Returns the rows written.
    size_t persistHeld(uint64_t first_line);
    /// Checkpoint of a completed stream: removes every held dispatch row of the source.
    void clearHeld();
    const std::optional<db::Error>& error() const { return error_; }

  private:
    struct Held {
        Dispatch d;
        bool stored = false;
        bool persisted = false;  ///< a held_dispatches row holds it (persistHeld())
    };
    /// The last dispatches of one (process, rank, runtime thread), oldest first: a ring of at most
    /// window_ + kSlack slots, whose strings and vectors are reused by later dispatches.
    struct Window {
        std::vector<Held> slots;
        size_t head = 0;  ///< index of the oldest slot once the ring is full
        /// The greatest line loaded by loadHeld(): a dispatch read again up to it is dropped
        /// (one whose ArgN lines began before the re-read line was loaded whole).
        uint64_t loadedThrough = 0;
        size_t size() const { return slots.size(); }
        Held& at(size_t i) { return slots[(head + i) % slots.size()]; }
        const Held& front() const { return slots[head]; }
    };
    /// A window's key: pid and rank (-1: none stated), runtime tid.
    struct ThreadKey {
        int64_t pid = -1;
        int64_t rank = -1;
        std::string tid;
    };
    /// ThreadKey without the string, to find a window without building a key per dispatch.
    struct KeyView {
        int64_t pid = -1;
        int64_t rank = -1;
        std::string_view tid;
    };
    /// Orders keys by pid, rank, then tid (ThreadKey and KeyView alike).
    struct KeyLess {
        using is_transparent = void;
        template <typename A, typename B>
        bool operator()(const A& a, const B& b) const {
            if (a.pid != b.pid) return a.pid < b.pid;
            if (a.rank != b.rank) return a.rank < b.rank;
            return std::string_view(a.tid) < std::string_view(b.tid);
        }
    };
    using Windows = std::map<ThreadKey, Window, KeyLess>;
    /// The slot for a new dispatch of `w`: a new one, or its oldest (overwritten; its
    /// held_dispatches row removed).
    Held& nextSlot(Window& w);
    /// Removes the held_dispatches rows of `w`'s slots (the window is dropped).
    void forgetPersisted(Window& w);
    /// The windows that a record of kind `kind`, `pid`, `rank` at `line` opens (evidence(),
    /// context()): flushed, each the last window_ dispatches before `line` (a flood's:
    /// FloodRule::window). A window of another stated pid or rank is not the record's.
    void flushFor(Kind kind,
                  std::optional<int64_t> pid,
                  std::optional<int64_t> rank,
                  uint64_t line);
    /// Stores the last `n` dispatches of `w` that precede line `before`.
    void flushWindow(Window& w, uint64_t before, size_t n);
    /// The greatest line of the fault records so far that flush the windows of `pid` and `rank`
    /// (-1: a window of dispatches naming no pid or rank, flushed by every fault of any pid or
    /// rank), nullopt when none.
    std::optional<uint64_t> lastFaultFor(int64_t pid, int64_t rank) const;
    /// Notes a fault record of `pid` and `rank` (nullopt: names none) at `line`.
    void noteFault(std::optional<int64_t> pid, std::optional<int64_t> rank, uint64_t line);
    /// The window of (pid, rank, tid), made when new (a direct-mapped cache by shortKeyHash() is
    /// tried first); nullptr when a new one was dropped at once to keep kMaxThreads (it had the
    /// first key).
    Window* windowOf(int64_t pid, int64_t rank, std::string_view tid);
    template <typename R>
    void check(const R& r) {
        if (!r && !error_) error_ = r.error();
    }

    static constexpr size_t kSlack = 64;          ///< dispatches kept beyond the window
    static constexpr size_t kMaxThreads = 1024;   ///< windows kept (process, rank, thread)
    static constexpr size_t kMaxKernels = 65536;  ///< kernel names remembered between commits
    /// Lines a record may be emitted after the greatest fault line seen (a block's record comes
    /// when the block ends): a pid's last fault this far beyond the flood span is forgotten.
    static constexpr uint64_t kLateLines = 65536;
    Store& store_;
    int64_t source_;
    size_t window_;
    uint64_t countAfter_;
    uint64_t countBefore_ = UINT64_MAX;  ///< uncountedFrom()
    IngestSummary& sum_;
    FloodRule flood_;
    /// Fault records (arrived, or stored before a resume's first line): greatest line of any,
    /// of those naming no pid, and per pid.
    struct LastFaults {
        std::optional<uint64_t> any, noPid;
        std::unordered_map<int64_t, uint64_t> byPid;
        size_t pruneAt = 1024;  ///< byPid's size that makes note() forget old pids
        /// The greatest line of those that flush a window of `pid` (-1: any).
        std::optional<uint64_t> lastFor(int64_t pid) const;
        /// Notes one of `pid` at `line`; pids whose last is more than `horizon` lines before
        /// the greatest line go when byPid grows past pruneAt.
        void note(std::optional<int64_t> pid, uint64_t line, uint64_t horizon);
    };
    LastFaults faults_;        ///< every fault record
    LastFaults noRankFaults_;  ///< those stating no rank
    /// those stating a rank, per rank (ranks with nothing within the horizon are forgotten)
    std::unordered_map<int64_t, LastFaults> rankFaults_;
    size_t rankPruneAt_ = 64;  ///< rankFaults_'s size that makes noteFault() forget old ranks
    Windows windows_;
    struct Count {
        int64_t pid = -1;
        int64_t n = 0;
        uint64_t first = 0, last = 0;
    };
    /// Hashes a kernel name 8 bytes a step (names are compared in full on a hash match).
    struct NameHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const;
    };
    /// Dispatch counts per kernel name, one entry per process under it (the name is hashed
    /// once per dispatch; no key string is built for a name seen before).
    std::unordered_map<std::string, std::vector<Count>, NameHash, std::equal_to<>> counts_;
    /// A count with n > 0 since the last flushCounts() (pointers into counts_'s nodes).
    struct Pending {
        int64_t pid;
        const std::string* name;
        std::vector<Count>* per;
        size_t i;
    };
    std::vector<Pending> pending_;
    /// A kernel name of counts_ with its counts (pointers into counts_'s nodes).
    struct RecentKernel {
        const std::string* name = nullptr;
        std::vector<Count>* per = nullptr;
    };
    /// The entry of `kernel` in counts_, made when new; the eight names found last are
    /// compared first (length, then bytes), before the name is hashed.
    RecentKernel countsOf(std::string_view kernel);
    std::array<RecentKernel, 8> recentKernels_{};
    size_t nextRecentKernel_ = 0;
    /// shortKernelName(kernel, 48) of the operand names and warnings of flushWindow(), kept
    /// per kernel name (demangling is ≈ 4 400 instructions a name; a window repeats few names).
    /// Valid until the next call.
    const std::string& shortName(const std::string& kernel);
    /// shortName()'s entries (cleared when it holds kMaxShortNames; names longer than
    /// kMaxShortNameKey bytes are not kept: at most ≈ 1 MiB).
    std::unordered_map<std::string, std::string, NameHash, std::equal_to<>> shortNames_;
    std::string shortScratch_;  ///< shortName() of a name too long to keep
    static constexpr size_t kMaxShortNames = 1024, kMaxShortNameKey = 1024;
    /// A window of windows_ found lately, at the high bits of its key's hash (every `window`
    /// is cleared when a window is erased).
    struct RecentWindow {
        int64_t pid = 0;
        int64_t rank = 0;
        std::string tid;
        Window* window = nullptr;
    };
    std::array<RecentWindow, 64> recentWindows_{};
    std::optional<db::Error> error_;
    /// Whether `e` is a kernel record (amdgpu fault, Xid, segfault, GPU reset, with its time
    /// stamp) the file's earlier content held (a source of the same file before this one:
    /// Store::earlierContentRecords()): the same text, each stored one matched once, or the
    /// tail of a stored block's lines (the ring wrapped inside that block).
    bool heldBefore(const Evidence& e);
    /// The earlier content's kernel records: key (kind, raw) → how many are not matched yet,
    /// and key (kind, last line) → their raw texts; loaded at the first kernel record.
    struct Earlier {
        std::unordered_map<uint64_t, uint32_t> whole;
        std::unordered_map<uint64_t, std::vector<std::string>> byLastLine;
    };
    std::optional<Earlier> earlier_;
    std::deque<uint64_t> truncated_;
    std::deque<uint64_t> unended_;  ///< markUnended()
    /// loadHeld()'s first line: held_dispatches rows from it on go at the next persistHeld().
    std::optional<uint64_t> staleHeldFrom_;
};

}  // namespace gpufault
