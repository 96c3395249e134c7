// Runs untrusted parsing (libdwfl over a core) in a forked child with limits, as
// systemd-coredump does: a crash, a hang or a memory blow-up of the child is an error value in
// the parent, never a crash or hang of gpufault.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "collectors/coredump/core_elf.h"

namespace gpufault::coredump {

/// Limits of one child.
struct ChildLimits {
    double seconds = 60;                  ///< wall clock; the child is killed (SIGKILL) after it
    uint64_t address_space = 4ull << 30;  ///< RLIMIT_AS, bytes
    uint64_t max_output = 64ull << 20;    ///< bytes the child may send back
};

/// Forks; the child runs `fn` and writes its result to a pipe, then exits without running
/// atexit handlers. The child gets RLIMIT_AS, RLIMIT_CORE 0 and is not dumpable. Errors:
/// the child timed out, was killed by a signal (e.g. SIGSEGV, or out of memory), or exited
/// without a complete result. Call from a single-threaded process.
Result<std::string> runInChild(const std::function<std::string()>& fn, const ChildLimits& limits);

}  // namespace gpufault::coredump
