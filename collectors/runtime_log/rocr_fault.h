// Matcher for ROCr Memory access fault and HW exception lines, debug agent, FORMATS.md §2, §9.7.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for ROCr's `Memory access fault by GPU node-N (Agent handle: …) on address
/// 0x…[(may not be exact address)]. Reason: ….` (runtime.cpp VMFaultHandler, ROCm ≥ 1.8; no
/// Agent handle ≤ 1.7) → rocr_memory_fault (gpu_node, address, address_exact, reason; a reason
/// split over two lines is completed only from ROCr's reason table); the old debug agent's
/// `Memory access fault by GPU agent:` / `Node:` / `Address: 0x…xxx (…)` block (address = page ×
/// 4096, inexact); the current debug agent's stopped waves (`wave_N: pc=0x… (kernel_code_entry=0x…
/// <symbol>, kernargs=0x…) (stopped, reason: MEMORY_VIOLATION)`) → `kernel`, `pc`,
/// `kernel_code_entry`, `kernargs`, `stop_reason` of the ROCr record after them (bounds and the
/// warning for waves no ROCr line takes: rocr_fault.cpp); `HW Exception by GPU node-N … reason
/// :CAUSE` → hsa_queue_error. §2, §9.7.
std::unique_ptr<Matcher> makeRocrFaultMatcher();

}  // namespace gpufault
