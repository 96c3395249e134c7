// Whether an executable given by the user (`gpufault ingest CORE --exe PATH`) is the one the
// core's process ran: by build-id when the core keeps its executable's ELF headers, else by the
// layout of its file mappings (NT_FILE) against the file's PT_LOAD segments.
#pragma once

#include <elfutils/libdwfl.h>
#include <libelf.h>

#include <optional>
#include <string>

namespace gpufault::coredump {

/// The verdict on one `--exe`.
struct ExeCheck {
    /// Set when the file must not be used: "--exe PATH has build-id X, the core's executable Y:
    /// not used", or a mapping of the core's executable that no PT_LOAD segment of PATH covers.
    std::optional<std::string> refused;
    /// Set when it is used without proof: the core keeps no build-id of its executable (a
    /// `coredump_filter` without bit 4, or headers not dumped) and its mappings fit PATH.
    std::optional<std::string> unverified;
    /// With `unverified`: the path of the executable the core names (its NT_FILE mapping).
    std::optional<std::string> core_exe;
};

/// Checks `exe` against the open core `core` (ELF_C_READ). `cb` gives libdwfl's lookup
/// callbacks for a probe session that reads the core's executable's build-id from its memory.
/// A core whose executable cannot be told (no NT_AUXV AT_ENTRY, no NT_FILE mapping holding it)
/// gives `unverified`.
ExeCheck checkExe(Elf* core, const Dwfl_Callbacks& cb, const std::string& exe);

}  // namespace gpufault::coredump
