// Matcher for amdgpu ring timeouts and GPU resets, FORMATS.md §1.5.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for amdgpu ring timeouts and GPU resets, FORMATS.md §1.5.
std::unique_ptr<Matcher> makeGpuResetMatcher();

}  // namespace gpufault
