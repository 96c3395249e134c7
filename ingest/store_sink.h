// The Sink that writes parser output to the store, keeping dispatch context windows.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "collectors/common/evidence.h"
#include "ingest/ingest.h"
#include "schema/store.h"

namespace gpufault {

/// Writes records of one source into the open transaction of `store`. Dispatches are counted
/// per (process, kernel) in full; dispatch rows (and their argument operands) are kept only in
/// a window of the last N per (process, runtime thread), written when a fault record arrives
/// (the N before the fault's line, even when a multi-line record is emitted a few lines late)
/// and at the end of the stream. Store errors are kept and reported by `error()`.
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
    /// Stores the last `window_` dispatches of `w` that precede line `before`.
    void flushWindow(std::deque<Held>& w, uint64_t before);
    template <typename R>
    void check(const R& r) {
        if (!r && !error_) error_ = r.error();
    }

    static constexpr size_t kSlack = 64;         ///< dispatches kept beyond the window
    static constexpr size_t kMaxThreads = 1024;  ///< windows kept (process, runtime thread)
    Store& store_;
    int64_t source_;
    size_t window_;
    uint64_t countAfter_;
    IngestSummary& sum_;
    std::map<ThreadKey, std::deque<Held>, KeyLess> windows_;
    struct Count {
        int64_t n = 0;
        uint64_t first = 0, last = 0;
    };
    std::map<std::pair<int64_t, std::string>, Count, KeyLess> counts_;
    std::optional<db::Error> error_;
    std::deque<uint64_t> truncated_;
};

}  // namespace gpufault
