// Feeding one matcher in unit tests: lines in, records out (no decoder).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "collectors/common/evidence.h"
#include "collectors/common/log_line.h"

namespace gpufault::testing {

/// Feeds one line to `m` without finishing it: number `line`, text = raw = `text` (for tests
/// that look at the matcher between lines: openSince(), idle()).
inline void feedLine(Matcher& m, Sink& out, uint64_t line, const std::string& text) {
    LogLine l;
    l.line = line;
    l.text = text;
    l.raw = text;
    m.feed(l, out);
}

/// Feeds `lines` (numbered from 1, text = raw = the line) to `m`, then finishes it. `tweak` may
/// set more LogLine fields (time, rank, AMD log fields) per line. Returns everything emitted.
inline CollectSink feedMatcher(Matcher& m,
                               const std::vector<std::string>& lines,
                               const std::function<void(LogLine&)>& tweak = {}) {
    CollectSink sink;
    uint64_t n = 0;
    for (const auto& s : lines) {
        LogLine l;
        l.line = ++n;
        l.text = s;
        l.raw = s;
        if (tweak) tweak(l);
        m.feed(l, sink);
    }
    m.finish(sink);
    return sink;
}

}  // namespace gpufault::testing
