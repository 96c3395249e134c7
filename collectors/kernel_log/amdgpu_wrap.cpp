#include "collectors/kernel_log/amdgpu_wrap.h"

#include <algorithm>

#include "collectors/common/text.h"
#include "collectors/kernel_log/amdgpu_line.h"

namespace gpufault::amdgpu {

bool stopsUnfinished(std::string_view text) {
    auto t = text::trimRight(text);
    if (t.empty()) return false;
    for (std::string_view end : {"page fault",
                                 "at address",
                                 "at page",
                                 "from client",
                                 "from IH client",
                                 "_FAULT_ADDR",
                                 "_FAULT_STATUS",
                                 "_FAULT_STATUS:",
                                 "_FAULT_ADDR:",
                                 "client ID:",
                                 "amdgpu:"})  // the device prefix alone: the message wrapped
        if (t.ends_with(end)) return true;
    return std::count(t.begin(), t.end(), '(') > std::count(t.begin(), t.end(), ')');
}

bool mayTakeProcess(std::string_view text) {
    auto at = text.find("GPU fault detected: ");
    return at != std::string_view::npos && text.find("for process", at) == std::string_view::npos;
}

bool WrappedLine::hold(const LogLine& l) {
    if (!mentionsAmdgpu(l.text) || !(stopsUnfinished(l.text) || mayTakeProcess(l.text)))
        return false;
    line_ = l;
    text_.assign(l.text);
    raw_.assign(l.raw.empty() ? l.text : l.raw);
    ident_.assign(l.ident);
    line_.runtime_tid = {};
    rest_ = 0;
    held_ = true;
    return true;
}

bool WrappedLine::takeRest(const LogLine& l, bool& done) {
    if (!held_ || !l.time.empty() || mentionsAmdgpu(l.text) || mentionsRadeon(l.text)) return false;
    auto rest = text::trim(l.text);
    if (rest.empty()) return false;
    // another producer's line (an Xid, a runtime error, a ROCr line) is never a rest
    for (std::string_view other : {std::string_view("NVRM"),
                                   std::string_view("rror"),
                                   std::string_view("Memory access fault")})
        if (rest.find(other) != std::string_view::npos) return false;
    if (!stopsUnfinished(text_) && !(mayTakeProcess(text_) && rest.starts_with("for process")))
        return false;
    text_ += ' ';
    text_.append(rest);
    appendRawLine(raw_, l.raw.empty() ? l.text : l.raw);
    done = ++rest_ >= kMaxRest || !stopsUnfinished(text_);
    return true;
}

const LogLine& WrappedLine::release() {
    held_ = false;
    line_.text = text_;
    line_.raw = raw_;
    line_.ident = ident_;
    return line_;
}

}  // namespace gpufault::amdgpu
