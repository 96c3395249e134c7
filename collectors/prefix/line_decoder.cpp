#include "collectors/prefix/line_decoder.h"

#include "collectors/common/text.h"

namespace gpufault {

// Placeholder until the prefix parsers land: passes text through, trims line endings.
struct LineDecoder::State {};

LineDecoder::LineDecoder() : state_(new State) {}
LineDecoder::~LineDecoder() { delete state_; }

void LineDecoder::feed(uint64_t line_no, std::string_view raw, const Emit& emit) {
    LogLine l;
    l.line = line_no;
    l.raw = raw;
    l.text = text::trimRight(raw);
    emit(l);
}

void LineDecoder::finish(const Emit&) {}

}  // namespace gpufault
