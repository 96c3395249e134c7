// /proc/PID files of a live process (proc(5)): pure parsers, text in, structs out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufault {

/// From /proc/PID/status: `Name:`, `Tgid:`, `PPid:`, the real `Uid:` and `NSpid:` (the pid in
/// each nested pid namespace, outermost first: the last one is what a containerized runtime
/// prints in its logs; kernel ≥ 4.1).
struct ProcStatus {
    std::string name;
    int64_t tgid = 0, ppid = 0;
    std::optional<int64_t> uid;
    std::vector<int64_t> nspid;
};
/// Missing fields stay empty/zero; nullopt when no `Name:` line is found.
std::optional<ProcStatus> parseProcStatus(std::string_view text);

/// One line of /proc/PID/maps: `START-END PERMS OFFSET DEV INODE [PATH]` (addresses in hex).
struct ProcMapping {
    uint64_t start = 0, end = 0, offset = 0;
    std::string perms;  ///< e.g. "r-xp"
    std::string path;   ///< file, `[heap]`, `[stack]`, … or "" for anonymous memory
};
/// Parses every well-formed line (a malformed one is skipped).
std::vector<ProcMapping> parseProcMaps(std::string_view text);

/// A loaded module: a file mapped into the process, with the range it spans.
struct ProcModule {
    std::string path;
    uint64_t start = 0, end = 0;  ///< lowest start and highest end of its mappings
    bool executable = false;      ///< one of its mappings is `x`
};
/// Files mapped by the process (paths starting with '/'), in address order, one per path.
/// ` (deleted)` stays in the path: the file changed after it was loaded.
std::vector<ProcModule> modulesOf(const std::vector<ProcMapping>& maps);

/// The cgroup v2 path (`0::/system.slice/docker-….scope`) of /proc/PID/cgroup, else the
/// first v1 line's path that is not "/"; "" when none.
std::string parseCgroup(std::string_view text);

/// Field 22 (starttime, clock ticks after boot) of /proc/PID/stat; the command name in
/// parentheses may itself hold spaces and parentheses. nullopt when malformed.
std::optional<uint64_t> parseStatStartTicks(std::string_view text);

}  // namespace gpufault
