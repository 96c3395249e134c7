// Test helper: runs a LineDecoder over lines and keeps owned copies of the LogLines.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/prefix/line_decoder.h"

namespace gpufault::testing {

/// An owned copy of a LogLine (the decoder's views die after each emit).
struct Decoded {
    uint64_t line = 0;
    std::string text, raw, ident, runtime_tid;
    TimeInfo time;
    Origin origin = Origin::Unknown;
    std::optional<int64_t> rank, ident_pid, log_pid;
    std::optional<int> amd_level;
};

/// `bare_amd`: offer each line to LineDecoder::feedBareAmd() first, as TextPipeline does.
inline std::vector<Decoded> decodeAll(const std::vector<std::string>& lines,
                                      bool bare_amd = false) {
    std::vector<Decoded> out;
    LineDecoder d;
    auto emit = [&out](const LogLine& l) {
        Decoded x;
        x.line = l.line;
        x.text = std::string(l.text);
        x.raw = std::string(l.raw);
        x.ident = std::string(l.ident);
        x.runtime_tid = std::string(l.runtime_tid);
        x.time = l.time;
        x.origin = l.origin;
        x.rank = l.rank;
        x.ident_pid = l.ident_pid;
        x.log_pid = l.log_pid;
        x.amd_level = l.amd_level;
        out.push_back(std::move(x));
    };
    uint64_t n = 0;
    LogLine bare;  // reused, as TextPipeline does
    for (const auto& s : lines) {
        if (bare_amd && d.feedBareAmd(n + 1, s, bare)) {
            ++n;
            emit(bare);
            continue;
        }
        d.feed(++n, s, emit);
    }
    d.finish(emit);
    return out;
}

/// printf into a std::string (the format strings of dmesg.c / logs-show.c).
template <typename... A>
inline std::string cfmt(const char* f, A... a) {
    char buf[256];
    int n = std::snprintf(buf, sizeof buf, f, a...);
    return std::string(buf, static_cast<size_t>(n));
}

/// strftime in the C locale of `tm`.
inline std::string cstrftime(const char* f, const std::tm& tm) {
    char buf[128];
    size_t n = std::strftime(buf, sizeof buf, f, &tm);
    return std::string(buf, n);
}

/// strftime in the C locale of 2025-09-09 02:30:28 (a Tuesday).
inline std::string cstrftime(const char* f) {
    std::tm tm{};
    tm.tm_year = 125, tm.tm_mon = 8, tm.tm_mday = 9, tm.tm_hour = 2, tm.tm_min = 30;
    tm.tm_sec = 28, tm.tm_wday = 2;
    return cstrftime(f, tm);
}

/// Decodes one physical line that must give exactly one logical line.
inline Decoded decodeOne(const std::string& line) {
    auto v = decodeAll({line});
    if (v.size() == 1) return v[0];
    Decoded bad;
    bad.text = "<" + std::to_string(v.size()) + " lines>";
    return bad;
}

}  // namespace gpufault::testing
