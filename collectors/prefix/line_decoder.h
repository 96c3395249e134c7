// The line decoder: strips transport and logger prefixes so that matchers see the message.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "collectors/common/log_line.h"

namespace gpufault {

/// Turns physical lines of one stream into LogLines. Stateful per stream (CRI partial lines,
/// kmsg continuation lines, compose-capture detection), bounded memory (a logical line is capped
/// at kMaxLine bytes; longer ones are truncated silently: LogLine has no field to flag it).
///
/// Prefixes recognised, outermost first, in any sensible combination (FORMATS.md §1.9, §9.2–9.4):
/// line ends (CR, CRLF, literal `^M`, trailing blanks); `> ` quotes; compose `svc-1  | ` (only in
/// a detected compose capture); CRI (`2025-06-05T12:40:08.1Z stderr F ...`, P pieces joined per
/// stream, the joined line numbered by its first piece); JSON-wrapped lines (any object whose
/// string field `log`/`MESSAGE`/`message`/`msg`/`data` holds the text, possibly several lines,
/// all numbered by the physical line); carriage-return progress bars (the text after the last
/// `\r`); kmsg records (`6,1234,5678901,-;text`, `\xHH` unescaped, ` KEY=value` continuation
/// lines dropped); journald short/short-precise/short-iso[-precise]/short-full/short-unix/
/// short-monotonic/short-delta and rsyslog traditional/RFC 3339/forwarded (`host ident[pid]: `,
/// then an optional printk stamp after `kernel: `); dmesg raw `[ 4778.915423]`, `-d`, `-T`,
/// `-H`/`-e` (localized months, comma decimals), `-x`, `-r`, iso, caller id; `docker logs -t`
/// and ComfyUI logger stamps; `[rankN]:`; finally the AMD_LOG_LEVEL prefix (parseAmdLogPrefix(),
/// FORMATS.md §3.1). Origin is Kernel only for kernel-log evidence (dmesg stamp, kmsg/`-x`/`-r`
/// facility 0, `kernel` identifier), Other for another identifier or facility, else Unknown.
/// `wall` is `YYYY-MM-DDTHH:MM:SS` to the second as printed (zone dropped), or `MM-DDTHH:MM:SS`
/// for stamps without a year (journald `short`, RFC 3164); `-H` stamps give no time.
class LineDecoder {
  public:
    static constexpr size_t kMaxLine = 1 << 20;  ///< bytes kept of one logical line
    using Emit = std::function<void(const LogLine&)>;

    LineDecoder();
    ~LineDecoder();
    LineDecoder(const LineDecoder&) = delete;
    LineDecoder& operator=(const LineDecoder&) = delete;
    /// Decode one physical line (without its '\n'); calls `emit` for each logical line (0..n).
    void feed(uint64_t line_no, std::string_view raw, const Emit& emit);
    /// Fast path for a bare AMD_LOG_LEVEL line (`:N:` in column 0, no carriage return inside,
    /// no CRI line pending), most lines of a level-3 log: fills `l` exactly as feed() would emit
    /// it, updates the state as feed() would and returns true. Otherwise returns false and
    /// changes nothing: call feed(). `l` is a default LogLine or one filled by this call before
    /// (the fields it sets are the same every time, so it can be reused without clearing).
    bool feedBareAmd(uint64_t line_no, std::string_view raw, LogLine& l);
    /// End of stream: emit what is still held (an unterminated CRI partial line).
    void finish(const Emit& emit);

  private:
    struct State;
    State* state_;
};

}  // namespace gpufault
