// Which amdgpu fault lines a mail client, a bug tracker or a hand wrapped at ~80 columns, and
// which lines are their rest (collectors/common/wrapped_line.h keeps the copy). Pure.
#pragma once

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

/// Whether line `l` is to be held for a wrapped rest: an amdgpu device line that stops
/// unfinished or may take a process line.
bool wantsRest(const LogLine& l);

/// Whether `l` is the rest of the held line `held` (its text joined so far): a line that may
/// be a wrapped rest (mayBeWrappedRest) naming no device, which the held line wants.
bool isRestOf(std::string_view held, const LogLine& l);

}  // namespace gpufault::amdgpu
