// Where recent lines of a stream started, for checkpoints that resume at an open block.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

namespace gpufault {

/// The positions (byte offsets, or kmsg sequence numbers) of lines among the last `keep` or
/// more lines of one stream, numbered consecutively. Stored in runs of lines (a batch of an
/// ingest is one run, taken whole) that may know the positions of some of their lines only: a
/// checkpoint asks for lines that a matcher or the dispatch windows saw, and for the oldest
/// line remembered (a run's first line, always known).
class LinePositions {
  public:
    explicit LinePositions(size_t keep) : keep_(keep) {}
    /// Line `line` (the one after the last added) starts at `pos`.
    void add(uint64_t line, int64_t pos) {
        if (runs_.empty() || runs_.back().count >= kRun ||
            runs_.back().first + runs_.back().count != line)
            runs_.push_back(Run{line, 0, {}});
        runs_.back().pos.emplace_back(line, pos);
        ++runs_.back().count;
        ++count_;
        trim();
    }
    /// Lines `first` … `first` + `count` − 1 as one run, of which `pos` gives the (line,
    /// position) pairs known, ascending by line, `first` among them.
    void addRun(uint64_t first, uint64_t count, std::vector<std::pair<uint64_t, int64_t>>&& pos) {
        if (count == 0) return;
        runs_.push_back(Run{first, count, std::move(pos)});
        count_ += count;
        trim();
    }
    /// The oldest line remembered, nullopt when none.
    std::optional<uint64_t> oldest() const {
        if (runs_.empty()) return std::nullopt;
        return runs_.front().first;
    }
    /// Where line `line` starts, nullopt when it is not remembered.
    std::optional<int64_t> at(uint64_t line) const {
        for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
            if (line < it->first || line >= it->first + it->count) continue;
            auto p = std::lower_bound(
                it->pos.begin(), it->pos.end(), line, [](const auto& e, uint64_t l) {
                    return e.first < l;
                });
            if (p == it->pos.end() || p->first != line) return std::nullopt;
            return p->second;
        }
        return std::nullopt;
    }

  private:
    static constexpr size_t kRun = 4096;
    struct Run {
        uint64_t first;
        uint64_t count;                                 ///< lines in the run
        std::vector<std::pair<uint64_t, int64_t>> pos;  ///< the known ones
    };
    void trim() {
        while (!runs_.empty() && count_ - runs_.front().count >= keep_) {
            count_ -= runs_.front().count;
            runs_.pop_front();
        }
    }
    size_t keep_;
    size_t count_ = 0;
    std::deque<Run> runs_;
};

}  // namespace gpufault
