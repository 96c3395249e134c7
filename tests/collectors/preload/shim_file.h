// The file the preload shim wrote for a process, found in its directory (tests only).
#pragma once

#include <filesystem>
#include <string>

namespace gpufault::testing {

/// The file the preload shim wrote for `pid` in `dir`: `gpufault-alloc.<pid>.<pidns>.<start
/// ticks>.log` (the first such name), else `gpufault-alloc.<pid>.log` (older shims, and the
/// name when there is none yet).
inline std::string shimFile(const std::string& dir, long pid) {
    std::string prefix = "gpufault-alloc." + std::to_string(pid) + ".";
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        std::string name = e.path().filename().string();
        if (name.starts_with(prefix) && name.ends_with(".log") && name != prefix + "log")
            return dir + "/" + name;
    }
    return dir + "/" + prefix + "log";
}

}  // namespace gpufault::testing
