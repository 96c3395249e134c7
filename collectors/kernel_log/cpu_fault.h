// Matcher for x86 segfault / traps lines, FORMATS.md §9.1.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for x86 segfault / traps lines, FORMATS.md §9.1.
std::unique_ptr<Matcher> makeCpuFaultMatcher();

}  // namespace gpufault
