// Matcher for amdgpu page-fault blocks (gmc v6-v12, FreeBSD), FORMATS.md §1.1-1.4, 1.8.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for amdgpu page-fault blocks (gmc v6-v12, FreeBSD), FORMATS.md §1.1-1.4, 1.8.
std::unique_ptr<Matcher> makeAmdgpuFaultMatcher();

}  // namespace gpufault
