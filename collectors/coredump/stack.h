// Stacks unwound from a core: frames, threads, and their JSON form (the unwinding child passes
// its result to the parent as this JSON over a pipe).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gpufault::coredump {

/// One frame. Follows systemd-coredump (src/shared/elf-util.c, frame_callback): `pc` is the
/// unwound pc (the return address in caller frames), symbol and source line are looked up at
/// pc − 1 in caller frames, and `module_offset` = pc − the module's start address, so offsets
/// compare with the "(libfoo.so + 0x…)" of its journal stacks.
struct Frame {
    uint64_t pc = 0;
    bool activation = false;                ///< pc is exact (the crashing frame, a signal frame)
    std::optional<std::string> module;      ///< the path the core records (NT_FILE / link_map)
    std::optional<std::string> build_id;    ///< lowercase hex
    std::optional<uint64_t> module_offset;  ///< bytes: pc − module start
    std::optional<std::string> symbol;      ///< demangled
    std::optional<uint64_t> symbol_offset;  ///< bytes: pc − symbol start
    std::optional<std::string> file;        ///< source file (DWARF), as the compiler wrote it
    std::optional<int64_t> line;
};

/// One thread's frames, innermost first.
struct Thread {
    int64_t tid = 0;
    bool crashed = false;              ///< the thread that received the fatal signal
    bool frames_truncated = false;     ///< the frame cap was hit
    std::optional<std::string> error;  ///< why unwinding stopped early (libdwfl's message)
    std::vector<Frame> frames;
};

/// All threads of one core.
struct CoreStack {
    std::vector<Thread> threads;
    bool threads_truncated = false;  ///< the thread cap or the unwind limit was hit
    /// Why the stack is partial when the unwinding child's own deadline stopped it: "unwind
    /// limit reached after N of M threads (S s)"; the threads it has are kept, crashing first.
    std::optional<std::string> partial;
    std::vector<std::string> modules_without_file;  ///< modules reported by build-id + offset only
    /// Files found at a module's recorded path that the core keeps no build-id for and whose
    /// segments do not fit the core's mappings of it (replaced since the crash): not used, as
    /// "MODULE: the file at PATH does not fit the core's mappings: WHY: not used".
    std::vector<std::string> modules_refused;
    /// Why UnwindOptions::exe was not used: "--exe PATH has build-id X, the core's executable
    /// Y: not used" (the executable is then looked up as without --exe).
    std::optional<std::string> exe_refused;
    /// Why UnwindOptions::exe was used without proof (exe_check.h: the core keeps no build-id
    /// of its executable; its mappings fit the file).
    std::optional<std::string> exe_unverified;
    /// With exe_unverified: the executable's path the core names (ExeCheck::core_exe).
    std::optional<std::string> exe_named;
};

nlohmann::json toJson(const CoreStack& s);
/// Parses toJson's output; nullopt when it is not that shape.
std::optional<CoreStack> stackFromJson(const nlohmann::json& j);

/// The crashing thread (else the first one); nullptr when there are none.
const Thread* crashingThread(const CoreStack& s);

/// A frame as one line, in systemd-coredump's words: `fakeamd::Symbol::getDeviceKernel(int)
/// const (libcrashlib.so + 0x116e)`; `n/a` for an unknown symbol, `[build-id]` after it when the
/// symbol is unknown.
std::string describeFrame(const Frame& f);

}  // namespace gpufault::coredump
