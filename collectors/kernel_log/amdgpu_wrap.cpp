#include "collectors/kernel_log/amdgpu_wrap.h"

#include <algorithm>

#include "collectors/common/text.h"
#include "collectors/common/wrapped_line.h"
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

bool wantsRest(const LogLine& l) {
    return mentionsAmdgpu(l.text) && (stopsUnfinished(l.text) || mayTakeProcess(l.text));
}

bool isRestOf(std::string_view held, const LogLine& l) {
    if (!mayBeWrappedRest(l) || mentionsAmdgpu(l.text) || mentionsRadeon(l.text)) return false;
    return stopsUnfinished(held) ||
           (mayTakeProcess(held) && text::trim(l.text).starts_with("for process"));
}

}  // namespace gpufault::amdgpu
