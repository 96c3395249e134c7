// The Sink that writes parser output to the store, keeping dispatch context windows.
#pragma once

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

/// Writes records of one source into the open transaction of `store`. Dispatches are counted
/// per (process, kernel) in full; dispatch rows (and their argument operands) are kept only in
/// a window of the last N per (process, runtime thread), written when a fault record arrives
/// (the N before the fault's line, even when a multi-line record is emitted a few lines late)
/// and at the end of the stream. Store errors are kept and reported by `error()`.
/// dispatch() takes the `kernel`, `args` and `pending_args` of its argument by swapping them with
/// those of an older held dispatch (`args` and `pending_args` come back empty, `kernel`
/// unspecified; `runtime_tid` is copied and left as it was), so a producer may reuse one
/// Dispatch and the capacity of its strings, setting those fields anew. Pending argument lines
/// are parsed only for the dispatches a window flush writes.
class StoreSink final : public Sink {
  public:
    StoreSink(Store& store,
              int64_t source_id,
              int window,
              uint64_t count_after_line,
              IngestSummary& summary);

    void evidence(Evidence&& e) override;
    void dispatch(Dispatch&& d) override;
    void operand(Operand&& o) override;
    void warning(Warning&& w) override;
    bool takesPendingArgs() const override { return true; }

    /// Line `line` was longer than the decoder keeps: records starting there get attr
    /// `truncated=1` (the last 64 such lines are remembered).
    void markTruncated(uint64_t line);

    /// Writes pending dispatch counts (call before each commit).
    void flushCounts();
    /// Writes every window (end of stream).
    void flushWindows();
    /// The line of the oldest dispatch still held (a resumed ingest re-reads from there so a
    /// later fault finds the same window), nullopt when none is held.
    std::optional<uint64_t> oldestHeldLine() const;
    const std::optional<db::Error>& error() const { return error_; }

  private:
    struct Held {
        Dispatch d;
        bool stored = false;
    };
    /// The last dispatches of one (process, runtime thread), oldest first: a ring of at most
    /// window_ + kSlack slots, whose strings and vectors are reused by later dispatches.
    struct Window {
        std::vector<Held> slots;
        size_t head = 0;  ///< index of the oldest slot once the ring is full
        size_t size() const { return slots.size(); }
        Held& at(size_t i) { return slots[(head + i) % slots.size()]; }
        const Held& front() const { return slots[head]; }
    };
    using ThreadKey = std::pair<int64_t, std::string>;  // pid (-1 none), runtime tid
    /// Orders (pid, text) keys as std::pair does, and finds them by (pid, string_view) without
    /// building a key string per dispatch.
    struct KeyLess {
        using is_transparent = void;
        template <typename A, typename B>
        bool operator()(const A& a, const B& b) const {
            return a.first != b.first ? a.first < b.first
                                      : std::string_view(a.second) < std::string_view(b.second);
        }
    };
    using KeyView = std::pair<int64_t, std::string_view>;
    using Windows = std::map<ThreadKey, Window, KeyLess>;
    /// Stores the last `window_` dispatches of `w` that precede line `before`.
    void flushWindow(Window& w, uint64_t before);
    /// The window of (pid, tid), made when new (a direct-mapped cache by shortKeyHash() is tried
    /// first); nullptr when a new one was dropped at once to keep kMaxThreads (it had the first
    /// key).
    Window* windowOf(int64_t pid, std::string_view tid);
    template <typename R>
    void check(const R& r) {
        if (!r && !error_) error_ = r.error();
    }

    static constexpr size_t kSlack = 64;          ///< dispatches kept beyond the window
    static constexpr size_t kMaxThreads = 1024;   ///< windows kept (process, runtime thread)
    static constexpr size_t kMaxKernels = 65536;  ///< kernel names remembered between commits
    Store& store_;
    int64_t source_;
    size_t window_;
    uint64_t countAfter_;
    IngestSummary& sum_;
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
    /// A window of windows_ found lately, at the high bits of its key's hash (every `window`
    /// is cleared when a window is erased).
    struct RecentWindow {
        int64_t pid = 0;
        std::string tid;
        Window* window = nullptr;
    };
    std::array<RecentWindow, 64> recentWindows_{};
    std::optional<db::Error> error_;
    std::deque<uint64_t> truncated_;
};

}  // namespace gpufault
