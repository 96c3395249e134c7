// Reading the small files that describe a machine (sysfs attributes, /proc entries) from trees a
// user may point us at (`--sysfs-root`, `--proc-root`): only regular files, never waiting on a
// FIFO, never more than a cap.
#pragma once

#include <cstddef>
#include <expected>
#include <string>

namespace gpufault {

/// The contents of `path` when it is a regular file (symlinks followed) of at most `max_bytes`
/// bytes. Errors (text, naming the path): cannot open (errno), not a regular file (a FIFO, a
/// directory, a device: opened without blocking, never read), larger than the cap (read stops one
/// byte past it; procfs files report size 0, so the cap is checked on what is read).
std::expected<std::string, std::string> readSmallFile(const std::string& path, size_t max_bytes);

}  // namespace gpufault
