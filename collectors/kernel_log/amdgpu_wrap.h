// Re-joins amdgpu fault lines that a mail client, a bug tracker or a hand wrapped at ~80
// columns: the rest of the line follows on lines without a stamp of their own. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/log_line.h"

namespace gpufault::amdgpu {

/// Whether an amdgpu device line `text` stops before its end (gmc_v9+ `…page fault` without
/// its `(src_id:…)`, a `(` not closed, `…at address`, `…at page`, `from client`, a
/// `*_FAULT_ADDR` / `*_FAULT_STATUS` / `Faulty UTCL2 client ID:` label without its value, the
/// `amdgpu:` prefix with no message): its rest is on the next lines.
bool stopsUnfinished(std::string_view text);

/// A gmc_v6–v8 / radeon header `GPU fault detected: N 0x…` without its `for process …`, which
/// old kernels never print: only a next line starting with `for process` is its rest.
bool mayTakeProcess(std::string_view text);

/// One amdgpu line held until its wrapped rest is read. The LogLine it gives points into its
/// own strings (valid until the next call that changes it).
class WrappedLine {
  public:
    /// Continuation lines joined to one line at most.
    static constexpr int kMaxRest = 3;

    bool holding() const { return held_; }
    uint64_t line() const { return line_.line; }
    /// Holds `l` (a copy) when it stops unfinished or may take a process line; false otherwise.
    bool hold(const LogLine& l);
    /// When `l` is the held line's rest (no stamp of its own, no device prefix, the held line
    /// wants it), joins it with a blank and returns true; `done` then says whether the joined
    /// line is complete (or took kMaxRest lines) and must be fed now.
    bool takeRest(const LogLine& l, bool& done);
    /// The held line (joined), and stops holding it.
    const LogLine& release();

  private:
    LogLine line_;
    std::string text_, raw_, ident_;
    int rest_ = 0;
    bool held_ = false;
};

}  // namespace gpufault::amdgpu
