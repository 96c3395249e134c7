// Matcher for NVRM Xid lines, FORMATS.md §6.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for NVRM Xid lines, FORMATS.md §6.
std::unique_ptr<Matcher> makeNvidiaXidMatcher();

}  // namespace gpufault
