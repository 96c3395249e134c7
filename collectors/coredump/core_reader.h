// A core file, read: its structure and notes, its threads unwound and symbolized (CPU cores)
// or its metadata (GPU cores), and the stack signature. The core stays where it is.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "collectors/coredump/core_elf.h"
#include "collectors/coredump/gpu_core.h"
#include "collectors/coredump/sandbox.h"
#include "collectors/coredump/signature.h"
#include "collectors/coredump/stack.h"
#include "collectors/coredump/unwind.h"

namespace gpufault::coredump {

struct ReadOptions {
    UnwindOptions unwind;
    ChildLimits limits;
    size_t signature_depth = 5;  ///< frames in the stack signature
    /// The name the core was written under, when `path` is a decompressed copy (the pid and
    /// time of GPU cores come from it).
    std::optional<std::string> name;
    /// false: a symbolic link at `path` is refused (O_NOFOLLOW), as for a file in a directory
    /// others may write (gpufaultd's core directories).
    bool follow_links = true;
};

struct CoreReport {
    std::string path;
    uint64_t size = 0;  ///< bytes
    int64_t mtime = 0;  ///< the core's time: file modification, UTC seconds
    CoreLayout layout;
    std::optional<CoreStack> stack;  ///< CPU cores
    StackSignature signature;
    std::map<std::string, std::string> runtimes;  ///< runtimeVersions() of the mapped files
    std::optional<GpuCoreMeta> gpu;               ///< GPU cores
    /// Why a CPU core has no stack although its notes were read (the unwinding child failed:
    /// its time or memory limit, a crash in libdw); the core is still stored from its notes.
    std::optional<std::string> unwind_error;
    double seconds = 0;                           ///< reading and unwinding, wall clock
};

/// Opens `path` read-only for reading a core or crash report named by untrusted input (a
/// journal entry, a directory anyone may write to): O_NONBLOCK (a FIFO or a device never blocks
/// the open), O_CLOEXEC, O_NOFOLLOW unless `follow_links`; the type is checked on the open
/// descriptor. Returns the descriptor (the caller closes it) of a regular file only. Errors:
/// "PATH: <strerror>" (a symbolic link: "Too many levels of symbolic links") or
/// "PATH: not a regular file".
Result<int> openRegular(const std::string& path, bool follow_links = true);

/// True when the file at `path` starts like a core (sniffCore); false when it cannot be read.
bool isCoreFile(const std::string& path);

/// Reads the core at `path`. Errors name the file: unreadable, not a core, notes cut. A core
/// cut after its notes (layout.truncated) is read: the frames its memory still holds, or none;
/// a core whose unwinding failed (the limited child timed out, died or ran out of memory) is
/// read without a stack, the reason in `unwind_error`.
Result<CoreReport> readCore(const std::string& path, const ReadOptions& opt = {});

}  // namespace gpufault::coredump
