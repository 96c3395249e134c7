// Matcher for ROCr Memory access fault and HW exception lines, debug agent, FORMATS.md §2, §9.7.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for ROCr Memory access fault and HW exception lines, debug agent, FORMATS.md §2, §9.7.
std::unique_ptr<Matcher> makeRocrFaultMatcher();

}  // namespace gpufault
