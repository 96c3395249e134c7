// A log line held until its wrapped rest is read: a mail client, a bug tracker's 80 columns or a
// hand broke one producer line into several, and the rest follows on lines without a stamp of
// their own. The matchers decide which lines stop unfinished and which may be a rest; this
// keeps the copy. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "collectors/common/log_line.h"

namespace gpufault {

/// Rest lines joined to one wrapped line at most.
constexpr int kMaxWrappedRests = 3;

/// Whether `l` may be the rest of a wrapped line: it has no stamp of its own, is not blank, and
/// is no other producer's line (an `NVRM:` message, an `…Error`/`error:` text, an exception, a
/// ROCr `Memory access fault`). Each matcher adds what its own rests look like.
bool mayBeWrappedRest(const LogLine& l);

/// One held line: a copy of the LogLine whose text, raw line and ident are its own strings (a
/// LogLine's views are valid only during Matcher::feed), with the rests appended.
class WrappedLine {
  public:
    bool holding() const { return held_; }
    /// The held line's number (its first physical line).
    uint64_t lineNumber() const { return line_.line; }
    /// Copies `l` and holds it (any line held before is dropped).
    void hold(const LogLine& l);
    /// Appends a rest: `rest` to the text after a blank, `from`'s physical line to raw.
    void append(std::string_view rest, const LogLine& from);
    /// Rests appended since hold().
    int rests() const { return rests_; }
    /// The held line, joined so far (valid until the next hold() or append()).
    const LogLine& line();
    /// The held line, joined, and stops holding it (valid until the next hold()).
    const LogLine& release();

  private:
    LogLine line_;
    std::string text_, raw_, ident_;
    int rests_ = 0;
    bool held_ = false;
};

}  // namespace gpufault
