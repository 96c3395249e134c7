#include "collectors/common/wrapped_line.h"

#include "collectors/common/text.h"

namespace gpufault {

bool mayBeWrappedRest(const LogLine& l) {
    if (!l.time.empty() || text::trim(l.text).empty()) return false;
    for (std::string_view other : {std::string_view("NVRM"),
                                   std::string_view("rror"),
                                   std::string_view("xception"),
                                   std::string_view("Memory access fault")})
        if (l.text.find(other) != std::string_view::npos) return false;
    return true;
}

void WrappedLine::hold(const LogLine& l) {
    line_ = l;
    text_.assign(l.text);
    raw_.assign(l.raw.empty() ? l.text : l.raw);
    ident_.assign(l.ident);
    line_.runtime_tid = {};  // kernel lines have none; never a view into the decoder's buffer
    rests_ = 0;
    held_ = true;
}

void WrappedLine::append(std::string_view rest, const LogLine& from) {
    text_ += ' ';
    text_.append(rest);
    appendRawLine(raw_, from.raw.empty() ? from.text : from.raw);
    ++rests_;
}

const LogLine& WrappedLine::line() {
    line_.text = text_;
    line_.raw = raw_;
    line_.ident = ident_;
    return line_;
}

const LogLine& WrappedLine::release() {
    held_ = false;
    return line();
}

}  // namespace gpufault
