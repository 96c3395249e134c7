// Container and wrapper prefixes: Docker json-file and other JSON-wrapped lines, CRI log lines,
// docker compose `svc-1  | ` prefixes (FORMATS.md §9.4).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/log_line.h"

namespace gpufault::prefix {

/// A CRI log line header `<RFC3339Nano> <stdout|stderr> <P|F>[:tags] ` (containerd
/// internal/cri/io/logger.go writeLineBuffer(), kubelet parseCRILog()).
struct CriHeader {
    size_t content_offset = 0;  ///< where the content starts
    bool partial = false;       ///< `P`: the logical line continues in the stream's next record
    bool is_stderr = false;
    std::optional<std::string> wall;    ///< the stamp to the second as printed
    std::optional<int64_t> wall_utc_s;  ///< its instant (the stamp's zone applied), seconds
};

/// nullopt when `line` is not a CRI record.
std::optional<CriHeader> parseCriHeader(std::string_view line);

/// The payload of a JSON-wrapped line.
struct JsonPayload {
    std::string text;  ///< the text field, JSON-decoded; may hold several `\n`-separated lines
    std::optional<std::string> wall;
    std::optional<int64_t> wall_utc_s;  ///< TimeInfo::wall_utc_s (a zoned or epoch stamp)
    std::optional<double> kernel_s;
    Origin origin = Origin::Unknown;
    std::string ident;
    std::optional<int64_t> ident_pid;
    /// Docker json-file records (`log` with `stream`): 0 stdout, 1 stderr; -1 for other JSON.
    /// Their `log` ends in `\n` for a complete line; a piece of a longer one has none.
    int docker_stream = -1;
};

/// A line holding one JSON object (leading blanks and a trailing `,` allowed) whose string field
/// `log` (Docker json-file, moby jsonfilelog marshalMessage()), `MESSAGE` (journalctl -o json),
/// `message`, `msg` (also util-linux dmesg -J records) or `data` holds the text. Docker's `time`
/// gives `wall`; journald's `SYSLOG_IDENTIFIER`/`_PID`/`_TRANSPORT`/`_SOURCE_MONOTONIC_TIMESTAMP`/
/// `__REALTIME_TIMESTAMP` and dmesg -J's numeric `time`/`pri` give ident, origin and time.
/// False when the line is not such an object (then it is plain text). `out` is overwritten (its
/// buffers are reused from line to line).
bool parseJsonLine(std::string_view line, JsonPayload& out);

/// `docker compose logs`/`up` prefixes `%-*s | ` (docker/compose cmd/formatter/logs.go), stripped
/// only once the stream is known to be a compose capture: a prefix whose name ends in the replica
/// index (`svc-1`, `proj-svc-1`, v1 `proj_svc_1`), or two consecutive padded prefixes (≥ 2
/// spaces before the `|`) with the `|` in the same column, within the first kDetectLines lines.
/// Before that nothing is stripped, so a runtime line holding ` | ` (hip_memory.cpp `| free :%zu |
/// total :%zu`) keeps its text.
class ComposePrefix {
  public:
    static constexpr unsigned kDetectLines = 64;
    /// Bytes of `line` to strip (0: none).
    size_t strip(std::string_view line);
    /// A line that starts with neither an alphanumeric character nor ESC (no compose prefix):
    /// the state change of strip() on it, which returns 0.
    void other();
    /// True when other() no longer changes anything (detection over, not a compose capture).
    bool settled() const { return !on_ && lines_ >= kDetectLines; }

  private:
    bool on_ = false;
    size_t weak_col_ = 0;
    unsigned lines_ = 0;
};

}  // namespace gpufault::prefix
