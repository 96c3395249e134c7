// Unwinding and symbolization of a CPU core with libdwfl (elfutils). The only file that calls
// libdw; run it through unwindCore(), which puts it in a limited child (sandbox.h).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "collectors/coredump/core_elf.h"
#include "collectors/coredump/sandbox.h"
#include "collectors/coredump/stack.h"

namespace gpufault::coredump {

/// Where symbols come from and how much is unwound.
struct UnwindOptions {
    std::optional<std::string> exe;  ///< the executable, when the core's recorded path is gone
    /// Extra debuginfo directories (absolute or relative to the cwd; made absolute), searched
    /// before libdwfl's default `:.debug:/usr/lib/debug`, which is always kept. A directory
    /// holding `.build-id/xx/rest` (the ELF itself, no suffix) names a module whose recorded
    /// path is missing.
    std::vector<std::string> debuginfo_path;
    size_t max_threads = 1024;  ///< threads unwound; `threads_truncated` when more exist
    size_t max_frames = 256;    ///< frames per thread; `frames_truncated` when more exist
    /// The unwinder's own deadline, seconds from the start of unwindInProcess (none: no
    /// deadline). The crashing thread is always unwound, first; once the deadline has passed no
    /// other thread is started (one in progress is dropped), and the stack is returned with
    /// `threads_truncated` and `partial` = "unwind limit reached after N of M threads (S s)".
    /// unwindCore() lowers it to childDeadline(ChildLimits::seconds).
    std::optional<double> seconds;
};

/// The limited child's own deadline for a parent limit of `limit` seconds: a margin (10 %, at
/// most 5 s) before it, so the child stops and sends what it has before the parent kills it.
double childDeadline(double limit);

/// The libdwfl debuginfo_path string for `dirs`: each made absolute, then the default
/// `:.debug:/usr/lib/debug` (pure apart from reading the cwd).
std::string debuginfoSearchPath(const std::vector<std::string>& dirs);

/// Unwinds every thread of the core at `path` in this process (libdwfl:
/// dwfl_core_file_report, dwfl_core_file_attach, dwfl_getthreads, dwfl_thread_getframes).
/// `crashing_tid` marks that thread and is unwound first. Untrusted input: call it through
/// unwindCore().
Result<CoreStack> unwindInProcess(const std::string& path,
                                  const UnwindOptions& opt,
                                  std::optional<int64_t> crashing_tid);

/// unwindInProcess in a forked child with `limits`, its own deadline (UnwindOptions::seconds) at
/// most childDeadline(limits.seconds): a core too big for the limit still gives the crashing
/// thread and the threads unwound in time, marked partial. Errors say what stopped it (the
/// parent's kill at limits.seconds stays as the backstop).
Result<CoreStack> unwindCore(const std::string& path,
                             const UnwindOptions& opt,
                             std::optional<int64_t> crashing_tid,
                             const ChildLimits& limits);

}  // namespace gpufault::coredump
