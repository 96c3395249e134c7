// apport's crash reports (`/var/crash/*.crash`), read as a stream of lines without I/O.
// Format (canonical/apport problem_report.py, ProblemReport.write): RFC 822-like `Key: value`
// lines; a multi-line value is `Key:` followed by lines indented with one space; a binary value
// is `Key: base64` followed by indented lines, each the base64 of one chunk: a gzip header
// (RFC 1952, with the key as file name), raw deflate blocks, and the gzip trailer (CRC-32 and
// size). Reports of old apport versions hold a zlib stream instead (`legacy_zlib`).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/coredump/core_elf.h"
#include "collectors/coredump/stack.h"

namespace gpufault::coredump {

/// The text fields of a report, and what was seen of its binary ones.
struct ApportReport {
    std::map<std::string, std::string> fields;  ///< text values (continuation lines joined)
    std::map<std::string, uint64_t> binary;     ///< binary field → decoded (compressed) bytes
    bool truncated_fields = false;              ///< a text value was cut at the cap

    /// ProcStatus `Pid:`; nullopt when absent or not a pid (1..kMaxPid).
    std::optional<int64_t> pid() const;
    std::optional<int> signal() const;  ///< `Signal`; nullopt when absent or not in 1..64
    /// A warning per field present but impossible (pid, signal, a Date past year 9999 or not
    /// in asctime's form), naming the field and its value: those are stored as unknown.
    std::vector<std::string> warnings() const;
    std::string executable() const;  ///< `ExecutablePath`
    /// `Date` (Python's time.asctime(), local time: `Mon Nov 30 08:31:38 2026`) as
    /// `2026-11-30T08:31:38`; nullopt when it is not that form.
    std::optional<std::string> wall() const;
    /// The crashing thread from `Stacktrace` (gdb's `bt full`: `#N  0xPC in SYMBOL (ARGS) at
    /// FILE:LINE` or `… from LIBRARY`; `??` is an unknown symbol; a frame whose pc gdb left
    /// out has pc 0), each pc placed in `ProcMaps` (module = the mapped file, offset = pc − its
    /// lowest mapped address, as systemd-coredump counts). nullopt without `Stacktrace`.
    std::optional<CoreStack> stack() const;
};

/// Reads a report line by line. The decoded bytes of the binary field `CoreDump` go to
/// `on_core` in order (a gzip, or legacy zlib, stream); other binary fields are only counted.
class ApportReader {
  public:
    using OnBytes = std::function<Result<void>(std::string_view)>;
    explicit ApportReader(OnBytes on_core, size_t max_text = 4u << 20)
        : onCore_(std::move(on_core)), maxText_(max_text) {}

    /// One line without its newline; `n` is its 1-based number. Errors name the line: a line
    /// that is neither `Key: value` nor a continuation, invalid base64, or on_core's error.
    Result<void> line(std::string_view l, uint64_t n);
    ApportReport& report() { return r_; }

  private:
    OnBytes onCore_;
    size_t maxText_;
    ApportReport r_;
    std::string key_;  ///< the field continuation lines belong to
    bool binary_ = false;
};

/// Decodes one line of base64 (RFC 4648, with padding); nullopt when it is not base64.
std::optional<std::string> decodeBase64(std::string_view s);

}  // namespace gpufault::coredump
