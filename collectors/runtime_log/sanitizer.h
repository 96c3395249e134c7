// Matcher for compute-sanitizer memcheck reports, FORMATS.md §9.5.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for compute-sanitizer memcheck reports, FORMATS.md §9.5.
std::unique_ptr<Matcher> makeSanitizerMatcher();

}  // namespace gpufault
