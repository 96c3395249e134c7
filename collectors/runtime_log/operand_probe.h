// Matcher for operand probe lines and canonical gpufault.operand lines.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for operand probe lines and canonical gpufault.operand lines.
std::unique_ptr<Matcher> makeOperandProbeMatcher();

}  // namespace gpufault
