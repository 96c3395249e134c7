// Matcher for x86 segfault / traps and arm64 unhandled-exception lines, FORMATS.md §9.1.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for x86 segfault / traps lines, FORMATS.md §9.1 (linux arch/x86/mm/fault.c
/// show_signal_msg(), arch/x86/kernel/traps.c show_signal(), arch/arm64/kernel/traps.c
/// arm64_show_signal(); mapping suffix of mm/memory.c print_vma_addr() before and since 6.10).
/// Out: one Kind::CpuSegfault record per line (address only for segfaults: exact, bytes; pid = tid
/// = the printed task id; module and module_offset in bytes). Keeps only a pending
/// `callbacks suppressed` count for the next record.
std::unique_ptr<Matcher> makeCpuFaultMatcher();

}  // namespace gpufault
