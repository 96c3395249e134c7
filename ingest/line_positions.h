// Where recent lines of a stream started, for checkpoints that resume at an open block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace gpufault {

/// The positions (byte offsets, or kmsg sequence numbers) of the last `keep` or more lines of
/// one stream, numbered consecutively. Stored in runs of lines (a batch of an ingest is one run,
/// taken whole), so that remembering costs nothing per line on the batched path.
class LinePositions {
  public:
    explicit LinePositions(size_t keep) : keep_(keep) {}
    /// Line `line` (the one after the last added) starts at `pos`.
    void add(uint64_t line, int64_t pos) {
        if (runs_.empty() || runs_.back().pos.size() >= kRun ||
            runs_.back().first + runs_.back().pos.size() != line)
            runs_.push_back(Run{line, {}});
        runs_.back().pos.push_back(pos);
        ++count_;
        trim();
    }
    /// Lines `first`, `first`+1, … start at `pos` (one run).
    void addRun(uint64_t first, const std::vector<uint64_t>& pos) {
        if (pos.empty()) return;
        runs_.push_back(Run{first, std::vector<int64_t>(pos.begin(), pos.end())});
        count_ += pos.size();
        trim();
    }
    /// The oldest line remembered, nullopt when none.
    std::optional<uint64_t> oldest() const {
        if (runs_.empty()) return std::nullopt;
        return runs_.front().first;
    }
    /// Where line `line` starts, nullopt when it is not remembered.
    std::optional<int64_t> at(uint64_t line) const {
        for (auto it = runs_.rbegin(); it != runs_.rend(); ++it)
            if (line >= it->first && line < it->first + it->pos.size())
                return it->pos[line - it->first];
        return std::nullopt;
    }

  private:
    static constexpr size_t kRun = 4096;
    struct Run {
        uint64_t first;
        std::vector<int64_t> pos;
    };
    void trim() {
        while (!runs_.empty() && count_ - runs_.front().pos.size() >= keep_) {
            count_ -= runs_.front().pos.size();
            runs_.pop_front();
        }
    }
    size_t keep_;
    size_t count_ = 0;
    std::deque<Run> runs_;
};

}  // namespace gpufault
