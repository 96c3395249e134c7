// The line decoder: strips transport and logger prefixes so that matchers see the message.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "collectors/common/log_line.h"
#include "collectors/runtime_log/amd_log_prefix.h"
#include "collectors/runtime_log/amd_shape_cache.h"

namespace gpufault {

/// A kept bare AMD_LOG_LEVEL line in the fixed ROCm 5.7–6.2 columns whose fields are not read
/// yet: what LineDecoder::fillFixed() needs to make its LogLine.
struct FixedLine {
    AmdFixedShape shape;       ///< shape.message 0: none
    uint32_t text_end = 0;     ///< bytes of the line without trailing blanks, CR/LF and `^M`
    bool check_trace = false;  ///< level 3 and trimmed: isApiTrace() of the filled line not asked
};

/// Turns physical lines of one stream into LogLines. Stateful per stream (CRI partial lines,
/// kmsg continuation lines, compose-capture detection), bounded memory (a logical line is capped
/// at kMaxLine bytes; longer ones are truncated silently: LogLine has no field to flag it).
///
/// Prefixes recognised, outermost first, in any sensible combination (FORMATS.md §1.9, §9.2–9.4):
/// line ends (CR, CRLF, literal `^M`, trailing blanks); `> ` / `>`+TAB quotes; compose `svc-1  | `
/// (only in a detected compose capture; the service is the line's rank, serviceRank()); CRI
/// (`2025-06-05T12:40:08.1Z stderr F ...`, P pieces joined per stream, the joined line numbered by
/// its first piece); JSON-wrapped lines (any object whose string field
/// `log`/`MESSAGE`/`message`/`msg`/`data` holds the text, possibly several lines, all numbered by
/// the physical line); carriage-return progress bars (the text after the last
/// `\r`); kmsg records (`6,1234,5678901,-;text`, `\xHH` unescaped, ` KEY=value` continuation
/// lines dropped); journald short/short-precise/short-iso[-precise]/short-full/short-unix/
/// short-monotonic/short-delta and rsyslog traditional/RFC 3339/forwarded (`host ident[pid]: `,
/// then an optional printk stamp after `kernel: `); dmesg raw `[ 4778.915423]`, `-d`, `-T`,
/// `-H`/`-e` (localized months, comma decimals), `-x`, `-r`, iso, caller id; `docker logs -t`
/// and ComfyUI logger stamps; vLLM's `(… pid=N) `; `[rankN]:`/`[defaultN]:`; finally the
/// AMD_LOG_LEVEL prefix (parseAmdLogPrefix(), FORMATS.md §3.1). Origin is Kernel only for
/// kernel-log evidence (dmesg stamp, kmsg/`-x`/`-r` facility 0, `kernel` identifier), Other for
/// another identifier or facility, else Unknown. `wall` is `YYYY-MM-DDTHH:MM:SS` to the second as
/// printed, or `MM-DDTHH:MM:SS` for stamps without a year (journald `short`, RFC 3164); `-H` stamps
/// give no time. A stamp that states its zone (or an epoch stamp) also gives `wall_utc_s`, its
/// instant.
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
    /// What feedBare() did with a line.
    enum class Bare {
        No,       ///< not a bare AMD_LOG_LEVEL line: call feed()
        Skipped,  ///< a level-3 line whose message `skip` accepted: nothing to emit
        Filled,   ///< `l` holds the line as feed() would emit it
        /// A line in the fixed columns, kept: `fx` says where its fields are, fillFixed()
        /// fills the LogLine feed() would emit (later, on any thread)
        Fixed,
    };
    /// feedBareAmd() with a cheaper path for lines in the fixed ROCm 5.7–6.2 columns
    /// (amdFixedShape()), most lines of a level-3 log: a level-3 line whose message `skip`
    /// accepts (the API trace lines) is only counted as seen; another one is not decoded here
    /// (Bare::Fixed: no field value is read, the caller hands `fx` to fillFixed()).
    /// `mayHaveCr` false: the caller knows the line has no '\r' (else it is searched here).
    template <typename Skip>
    Bare feedBare(uint64_t line_no,
                  std::string_view raw,
                  LogLine& l,
                  FixedLine& fx,
                  Skip&& skip,
                  bool mayHaveCr) {
        if (raw.size() < 40 || raw[0] != ':' || (!quiet_ && criPending())) return Bare::No;
        switch (classifyBare(shapes_, raw, fx, skip, mayHaveCr)) {
            case Class::Drop:
                if (!quiet_) bareAmdSeen();
                return Bare::Skipped;
            case Class::Fixed:
                if (!quiet_) bareAmdSeen();
                return Bare::Fixed;
            case Class::Other:
                break;
        }
        return feedBareAmd(line_no, raw, l) ? Bare::Filled : Bare::No;
    }
    /// What feedBare() makes of a line while the decoder is quiet(), from the line's bytes only.
    enum class Class : uint8_t {
        Drop,  ///< Bare::Skipped (a level-3 line in the fixed columns whose message `skip` accepts)
        Fixed,  ///< Bare::Fixed, with `fx`
        Other,  ///< anything else: feed the line through feedBare() (or feed())
    };
    /// The pure half of feedBare(): `shapes` is a cache (any instance gives the same answers),
    /// so any thread may classify lines with its own. While quiet() a Drop line changes no
    /// decoder state (feedBare() only returns Skipped) and a Fixed line is fillFixed()'s with
    /// `fx` (feedBare() returns Fixed with the same `fx`); with the decoder not quiet, or for
    /// Other, the line must go through feedBare()/feed() in order.
    template <typename Skip>
    [[gnu::always_inline]] static Class classifyBare(
        AmdShapeCache& shapes, std::string_view raw, FixedLine& fx, Skip&& skip, bool mayHaveCr) {
        if (raw.size() < 40 || raw[0] != ':' || raw.size() > kMaxLine) return Class::Other;
        const AmdFixedShape sh = shapes.shape(raw);
        if (sh.message == 0) return Class::Other;
        if (mayHaveCr && std::memchr(raw.data(), '\r', raw.size())) return Class::Other;
        if (raw[1] == '3' && skip(raw.substr(sh.message))) return Class::Drop;
        return fixedOf(raw, sh, fx) ? Class::Fixed : Class::Other;
    }
    /// Whether the decoder's state is settled (no CRI piece pending, compose detection over)
    /// and only bare AMD lines came since: then feedBare() of a Drop line changes nothing.
    bool quiet() const { return quiet_; }
    /// The LogLine of a line (`raw`, numbered `line_no`) that feedBare() returned as
    /// Bare::Fixed with `fx`, as feed() would emit it; the fields it sets are the same each
    /// time, so `l` can be reused without clearing. Pure: any thread, any time while `raw` lives.
    static void fillFixed(uint64_t line_no, std::string_view raw, const FixedLine& fx, LogLine& l) {
        const std::string_view t = raw.substr(0, fx.text_end);
        int64_t us = 0, pid = 0;
        std::string_view tid;
        amdFixedValues(t, fx.shape, us, pid, tid);
        l.line = line_no;
        l.raw = raw;
        l.amd_level = raw[1] - '0';
        l.log_pid = pid;
        l.runtime_tid = tid;
        l.time.runtime_us = us;
        l.text = t.substr(std::min(fx.shape.message, t.size()));
    }
    /// End of stream: emit what is still held (an unterminated CRI partial line).
    void finish(const Emit& emit);
    /// For a line without '\r' whose fixed shape `sh` is known: `fx` for fillFixed(), or false
    /// when the shape of the trimmed line might differ (then feedBareAmd() decides). Pure.
    /// Inline: with `sh` passed by reference to a call, the shape of every line was spilled.
    [[gnu::always_inline]] static bool fixedOf(std::string_view raw,
                                               const AmdFixedShape& sh,
                                               FixedLine& fx) {
        // The shape was read from the first 96 bytes, or all of a shorter line: the same for
        // the line without its trailing blanks when that keeps them (or the whole line).
        const char last = raw.back();
        size_t end = raw.size();
        if (last == ' ' || last == '\t' || last == '\r' || last == '\n' || last == 'M')
            end = trimmedSize(raw);
        const bool whole = end == raw.size();
        if (end < 96 && !whole) return false;
        fx.shape = sh;
        fx.text_end = static_cast<uint32_t>(end);
        fx.check_trace = !whole && raw[1] == '3';  // else skip() already said no to this text
        return true;
    }

  private:
    /// The size of `raw` without its line end (trailing blanks, CR/LF, `^M`).
    static size_t trimmedSize(std::string_view raw);
    bool criPending() const;
    void bareAmdSeen();
    struct State;
    State* state_;
    AmdShapeCache shapes_;  ///< feedBare()'s shape check, with the last line's tail remembered
    /// True while only bare AMD lines came since bareAmdSeen() found the state settled (no CRI
    /// line pending, compose detection over): another bare line changes nothing, so the fast
    /// path skips both out-of-line checks. feed() and finish() clear it.
    bool quiet_ = false;
};

}  // namespace gpufault
