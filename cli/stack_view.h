// Text of cores and stacks for `stack`, `show` and `report`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schema/core_queries.h"

namespace gpufault::cli {

/// `crashmain pid 14046, SIGSEGV (SEGV_MAPERR) at 0x000000000000008a` (CPU cores);
/// `rocr_gpu core of pid 77, gfx90a` (GPU cores).
std::string coreTitle(const CoreRow& c);

/// Why a core's stack is partial (cores.meta `stack_partial`: "unwind limit reached after N of M
/// threads (S s)"); nullopt when it is whole or only the thread cap cut it.
std::optional<std::string> stackPartial(const CoreRecord& c);

/// The facts below a core's title, each line indented by `indent`: path, size and time,
/// signature, GPU runtimes, modules without a file, truncation.
std::string coreFacts(const CoreRow& c, const std::string& indent);

/// One frame in systemd-coredump's layout plus the source line:
/// `#0  0x00007f5eb547916e fakeamd::Symbol::getDeviceKernel(int) const + 0x54
/// (libcrashlib.so + 0x116e) ./crashlib.cpp:13`; a frame without symbol ends with its build-id.
std::string frameLine(size_t n, const coredump::Frame& f);

/// `Thread T (crashed):` and its frames (at most `max_frames`, then `… N more`).
std::string threadText(const coredump::Thread& t, size_t max_frames, const std::string& indent);

/// A thread that was inside the GPU runtime, and the frames shown of it: [begin, end).
struct RuntimeThread {
    const coredump::Thread* thread = nullptr;
    size_t begin = 0, end = 0;
};

/// The threads other than the crashed one with a frame in the GPU runtime (libamdhip64,
/// libhsa-runtime64, libamd_comgr: coredump::isGpuRuntimeModule), in `threads`' order, each
/// with at most `max_frames` frames ending two frames below its first runtime frame.
std::vector<RuntimeThread> runtimeThreads(const std::vector<coredump::Thread>& threads,
                                          size_t max_frames);

/// The threads other than the crashed one that were inside the HIP runtime (a frame in
/// libamdhip64, libhsa-runtime64 or libamd_comgr: coredump::isGpuRuntimeModule): for a ROCr
/// abort, which dies on the runtime's event thread, where the program's GPU work was. At most
/// `max_threads` threads (then `… N more`), each with at most `max_frames` frames, innermost
/// first, ending two frames below its first runtime frame (inner frames skipped when that is
/// deeper). "" when no such thread exists.
std::string runtimeThreadsText(const std::vector<coredump::Thread>& threads,
                               size_t max_threads,
                               size_t max_frames,
                               const std::string& indent);

}  // namespace gpufault::cli
