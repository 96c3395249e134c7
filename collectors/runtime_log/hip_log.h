// Matcher for AMD_LOG_LEVEL messages: ShaderName dispatches, ArgN operands, Returned hipError, queue callbacks, code-object and allocation failures, FORMATS.md §3.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for AMD_LOG_LEVEL messages: ShaderName dispatches, ArgN operands, Returned hipError, queue callbacks, code-object and allocation failures, FORMATS.md §3.
std::unique_ptr<Matcher> makeHipLogMatcher();

}  // namespace gpufault
