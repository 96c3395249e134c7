// Whether an executable given by the user (`gpufault ingest CORE --exe PATH`) is the one the
// core's process ran: by build-id when the core keeps its executable's ELF headers, else by the
// layout of its file mappings (NT_FILE) against the file's PT_LOAD segments.
#pragma once

#include <elfutils/libdwfl.h>
#include <libelf.h>

#include <optional>
#include <string>
#include <vector>

#include "collectors/coredump/core_elf.h"

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
/// gives `unverified`. `named` begins the messages: how the file was chosen ("--exe PATH").
ExeCheck checkExe(Elf* core,
                  const Dwfl_Callbacks& cb,
                  const std::string& exe,
                  const std::string& named = "");

/// The path of the core's executable: its NT_FILE mapping that holds AT_ENTRY (NT_AUXV);
/// nullopt when the core does not tell.
std::optional<std::string> coreExePath(Elf* core);

/// Whether the core keeps its executable's build-id (its ELF headers were dumped: libdwfl then
/// finds and checks the file itself).
bool coreKeepsExeBuildId(Elf* core, const Dwfl_Callbacks& cb);

/// The core's file mappings (its NT_FILE note), in note order; empty when it has none.
std::vector<MappedFile> coreFileMappings(Elf* core);

/// Why the ELF file at `path` is not the file the core mapped as `maps` (the mappings of one
/// path): "not an ELF file", or a mapping none of its PT_LOAD segments holds (address and file
/// offset in step); nullopt when every mapping fits. The check the executable gets without a
/// build-id, for any module whose build-id the core does not keep.
std::optional<std::string> fileLayoutMismatch(const std::string& path,
                                              const std::vector<MappedFile>& maps);

}  // namespace gpufault::coredump
