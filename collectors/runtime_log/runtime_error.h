// Matcher for HIP/CUDA/PyTorch error text and math-library missing code objects, FORMATS.md §9.5, 9.6, 9.8.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for HIP/CUDA/PyTorch error text and math-library missing code objects, FORMATS.md §9.5, 9.6, 9.8.
std::unique_ptr<Matcher> makeRuntimeErrorMatcher();

}  // namespace gpufault
