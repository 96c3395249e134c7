// `gpufault status|watch`: the client end of gpufaultd's control socket (a Unix stream socket
// carrying one request line and JSON reply lines, daemon/control.h). Bounded in time and size:
// a daemon that never answers or sends an endless line cannot hang or exhaust the CLI.
#pragma once

#include <chrono>
#include <cstddef>
#include <expected>
#include <optional>
#include <string>

namespace gpufault::cli {

using Deadline = std::optional<std::chrono::steady_clock::time_point>;  ///< nullopt: no limit

/// The longest reply line read (bytes). A status reply is ~200 bytes per stream, a watch line
/// at most a few KiB (an evidence record keeps 4 KiB of its raw line).
inline constexpr size_t kMaxReplyLine = size_t{16} << 20;

/// Connects to the control socket at `path` and sends `request` + "\n". Errors are messages
/// naming the path: longer than 107 bytes (sun_path), not reachable (with errno's text), no
/// connection accepted before `deadline` (a daemon whose backlog is full).
std::expected<int, std::string> connectDaemon(const std::string& path,
                                              const std::string& request,
                                              Deadline deadline);

/// Reads '\n'-terminated lines from a socket; `buf` carries bytes read past the last line.
class LineReader {
  public:
    enum class Result { Line, End, Timeout, TooLong, Error };
    explicit LineReader(int fd) : fd_(fd) {}
    /// The next line (without its '\n') into `line`. End: the peer closed (a partial last line
    /// is dropped); Timeout: `deadline` passed; TooLong: no '\n' within kMaxReplyLine bytes;
    /// Error: read/poll failed (errno kept).
    Result next(std::string& line, Deadline deadline);

  private:
    int fd_;
    std::string buf_;
    size_t scanned_ = 0;  ///< bytes of buf_ known to hold no '\n'
};

}  // namespace gpufault::cli
