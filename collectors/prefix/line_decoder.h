// The line decoder: strips transport and logger prefixes so that matchers see the message.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "collectors/common/log_line.h"

namespace gpufault {

/// Turns physical lines of one stream into LogLines. Stateful per stream (dmesg -H time breaks,
/// CRI partial lines, kmsg continuation lines), bounded memory (a logical line is capped at
/// kMaxLine bytes; longer ones are truncated and flagged with a warning).
///
/// Prefixes recognised, outermost first, in any sensible combination (FORMATS.md §1.9, §9.2–9.4):
/// `> ` quotes; Docker json-file / JSON-wrapped lines (`{"log":"...\n",...}`, any object whose
/// string field `log`/`data`/`message`/`msg`/`MESSAGE` holds the text, possibly several lines);
/// CRI (`2025-06-05T12:40:08.1Z stderr F ...`, P pieces joined); compose `svc  | `; kmsg records
/// (`6,1234,5678901,-;text`, `\xHH` unescaped, ` KEY=value` continuation lines dropped);
/// journald short/short-iso/short-precise/short-monotonic and rsyslog traditional/RFC 3339
/// (`host ident[pid]: `); dmesg raw `[ 4778.915423]`, `-T`, `-H`/`-e` (localized months, comma
/// decimals), `-x`, `-r`, iso; `[rankN]:`; carriage-return progress bars; CRLF and literal `^M`;
/// the AMD_LOG_LEVEL prefix in all six generations (FORMATS.md §3.1).
class LineDecoder {
public:
    static constexpr size_t kMaxLine = 1 << 20;  ///< bytes kept of one logical line
    using Emit = std::function<void(const LogLine&)>;

    LineDecoder();
    ~LineDecoder();
    /// Decode one physical line (without its '\n'); calls `emit` for each logical line (0..n).
    void feed(uint64_t line_no, std::string_view raw, const Emit& emit);
    /// End of stream: emit what is still held (an unterminated CRI partial line).
    void finish(const Emit& emit);

private:
    struct State;
    State* state_;
};

}  // namespace gpufault
