// Matcher for NVRM Xid lines, FORMATS.md §6.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for NVRM Xid lines, FORMATS.md §6 (open-gpu-kernel-modules kernel_rc.c prefix,
/// all driver generations). In: decoded lines of one stream, the `NVRM: Xid (` anchor anywhere.
/// Out: one Kind::NvidiaXid record per line with the Xid number (pci, xid, pid, process; for MMU
/// faults the 4 KiB page address, not exact, client, reason, access). An Xid 31 line that stops
/// before its MMU fault's type (wrapped by hand or a mail client) takes up to three following
/// lines without a stamp of their own as its rest.
std::unique_ptr<Matcher> makeNvidiaXidMatcher();

}  // namespace gpufault
