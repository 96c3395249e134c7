// Helpers shared by the runtime-log matchers: AMD log fields of a line, record skeletons,
// `[rankN]:` fallback and folding of repeated identical errors. Internal to runtime_log/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/log_line.h"

namespace gpufault::rt {

/// The AMD_LOG_LEVEL fields of one line, from the line decoder when it set them (amd_level),
/// else parsed from `text` here.
struct AmdFields {
    bool present = false;               ///< the line carries an AMD log prefix
    std::optional<int64_t> pid;         ///< `[pid:N ..]` / `N : [tid:..]`; nullopt when absent
    std::string_view runtime_tid;       ///< `0x...`, "" when absent
    std::optional<int64_t> runtime_us;  ///< the prefix stamp
    std::string_view message;           ///< text after the prefix (all of `text` when absent)
};

/// amdFieldsAtStart() of a line the decoder set no amd_level for: `text` parsed.
AmdFields amdFieldsParsed(const LogLine& l);
/// AMD fields when the prefix is at the start of `text` (or the decoder removed it). Cheap:
/// inline when the decoder set them (every kept line of a level-3 log).
inline AmdFields amdFieldsAtStart(const LogLine& l) {
    if (!l.amd_level) return amdFieldsParsed(l);
    AmdFields f;
    f.present = true;
    f.pid = l.log_pid;
    f.runtime_tid = l.runtime_tid;
    f.runtime_us = l.time.runtime_us;
    f.message = l.text;
    return f;
}
/// Like amdFieldsAtStart, but also finds a prefix behind other text (`> `, a JSON wrapper,
/// `[rank3]: `) in the first 512 bytes. For lines that already matched an anchor.
AmdFields amdFieldsAnywhere(const LogLine& l);

/// `rank` of the line: LogLine.rank, else `[rankN]:` in the text, else NCCL's `Rank N]`.
std::optional<int64_t> rankOf(const LogLine& l);

/// An Evidence with kind, line, time (plus the AMD stamp), rank, raw (≤ 4 KiB), vendor and,
/// for AMD log lines, pid and runtime_tid. A line a journal stated the pid of (`ident[PID]:`,
/// `_PID`; not `kernel:`) gets the `journal_pid` attr (not `pid`).
Evidence baseEvidence(Kind kind, const LogLine& l, const AmdFields& amd, const char* vendor);

/// Appends `more` to `raw` on a new line, keeping at most 4 KiB.
void appendRaw(std::string& raw, std::string_view more);

/// Holds runtime_error / missing_code_object records until the end of the stream so that
/// identical ones (same kind, reason, pid, rank, vendor, kernel and `target` attr; not two
/// that name different binaries by their `file`/`ptr` attrs; without a
/// reason also the same `code` and `message` attrs) become one
/// record with `count` incremented; the first line is kept. At most kMax distinct records are
/// held; further ones are emitted at once. A record held is shown to the sink at once
/// (Sink::context()), so its context does not depend on when it is emitted. closeBefore()
/// emits held records early (a fold kFoldLines old: Matcher::closeFolded()).
class Folder {
  public:
    static constexpr size_t kMax = 64;
    /// closeProcess() lines remembered (the oldest is forgotten first).
    static constexpr size_t kMaxBarriers = 256;
    /// Folds or keeps `e`; returns the held record it went into (valid until flush), nullptr
    /// when it was emitted directly.
    Evidence* add(Evidence&& e, Sink& out);
    /// Emits everything held, in order of first line.
    void flush(Sink& out);
    /// Emits a copy of everything held (count so far), in order of first line, and keeps
    /// holding it: a later emission of the same record carries the grown count (the store
    /// keeps the larger: Store::raiseCount()).
    void publish(Sink& out) const;
    /// Emits the records held whose first line is before `before`, in order of first line;
    /// a later identical record starts a new one. Invalidates the pointers add() returned.
    void closeBefore(uint64_t before, Sink& out);
    /// A record that ends a process (a fault: Matcher::closeProcess()) at line `at`, with its
    /// pid and rank (nullopt: none stated): emits the records held whose first line is before
    /// `at` and whose process it may be (same pid or either pid-less, same rank or either
    /// rank-less), in order of first line; no record before `at` folds a repeat after it.
    /// Invalidates the pointers add() returned.
    void closeProcess(uint64_t at,
                      std::optional<int64_t> pid,
                      std::optional<int64_t> rank,
                      Sink& out);
    /// The first line of the oldest record closeBefore() emitted whose repeats span `line`
    /// (its first line < `line` <= its last repeat's line), nullopt when none.
    std::optional<uint64_t> closedAround(uint64_t line) const;
    /// The first line of the records held, nullopt when none.
    std::optional<uint64_t> firstLine() const;

  private:
    std::vector<Evidence> held_;
    std::vector<uint64_t> last_;  ///< the line of the last repeat of held_[i]
    struct Closed {
        uint64_t first, last;
    };
    std::vector<Closed> closed_;  ///< folds closeBefore() emitted with repeats (recent ones)
    struct Barrier {
        uint64_t line;
        std::optional<int64_t> pid, rank;
    };
    /// Recent closeProcess() lines: a record added later with an earlier line (one a matcher
    /// still held back) folds no repeat after them.
    std::vector<Barrier> barriers_;
    /// True when a barrier of `h`'s process lies after h's line and before `line`.
    bool barrierBetween(const Evidence& h, uint64_t line) const;
    /// Emits the held records for which `close(i)` is true, in order of first line; `now`
    /// ages closed_.
    template <typename Close>
    void closeWhere(uint64_t now, Close&& close, Sink& out);
};

/// Identifier characters `[A-Za-z0-9_]` starting at `i`.
std::string_view identAt(std::string_view s, size_t i);
/// True for `[A-Za-z0-9_]`.
bool isIdentChar(char c);

}  // namespace gpufault::rt
