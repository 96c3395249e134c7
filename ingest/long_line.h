// A line over LineDecoder::kMaxLine as the decoder sees it, whole (cutLongLine) or built from
// the pieces a reader gets of it (LongLine): shared by `gpufault ingest` (LineReader, LineBatch)
// and gpufaultd's file tail, so that both give the decoder the same text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "collectors/prefix/line_decoder.h"

namespace gpufault {

/// A line over `max` bytes (LineDecoder::kMaxLine unless given) as the decoder sees it: from
/// its last '\r' on (that '\r' kept, so the decoder takes the text after it as a terminal shows
/// it: a CR progress bar of megabytes before the message, docs/formats.md), cut at `max`. Its
/// text before that '\r' (a line prefix too) is not seen. A '\r' that is the line's last byte
/// does not count. A line within `max` is returned whole.
inline std::string_view cutLongLine(std::string_view l, size_t max = LineDecoder::kMaxLine) {
    if (l.size() <= max) return l;
    size_t cr = l.rfind('\r');
    if (cr != std::string_view::npos && cr + 1 < l.size()) l.remove_prefix(cr);
    return l.substr(0, max);
}

/// cutLongLine() of a line over `max` bytes that is read in pieces (a reader's buffer at a
/// time, a daemon's poll at a time): start() with its first piece (at least `max` bytes),
/// add() each later one (without the '\n'); text() is then cutLongLine() of the whole line,
/// whatever the pieces were. Keeps at most 2 × `max` bytes.
class LongLine {
  public:
    explicit LongLine(size_t max = LineDecoder::kMaxLine) : max_(max) {}
    /// A new line, its first bytes.
    void start(std::string_view first) {
        head_.assign(first.substr(0, max_));
        tail_.clear();
        afterCr_ = false;
        add(first);
    }
    /// The line's next bytes.
    void add(std::string_view part) {
        if (size_t cr = part.rfind('\r'); cr != std::string_view::npos) {
            tail_.assign(part.substr(cr, max_));  // '\r' and what follows it
            afterCr_ = true;
        } else if (afterCr_ && tail_.size() < max_) {
            tail_.append(part.substr(0, max_ - tail_.size()));
        }
    }
    /// The line as the decoder sees it (valid until the next start() or add()).
    std::string_view text() const {
        return afterCr_ && tail_.size() > 1 ? std::string_view(tail_) : std::string_view(head_);
    }

  private:
    size_t max_;
    std::string head_;     ///< the first max_ bytes
    std::string tail_;     ///< the last '\r' so far and what follows it, cut at max_
    bool afterCr_ = false;  ///< a '\r' was seen (tail_ holds it)
};

}  // namespace gpufault
