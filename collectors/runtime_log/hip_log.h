// Matcher for AMD_LOG_LEVEL messages: ShaderName dispatches, ArgN operands, Returned hipError,
// queue callbacks, code-object and allocation failures, FORMATS.md §3.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for AMD_LOG_LEVEL messages of HIP/ROCclr (ROCm/clr, FORMATS.md §3.2–3.4).
/// In: decoded lines (prefix fields from the decoder, else parsed here). Out: a Dispatch per
/// `ShaderName : NAME` / `Graph shader name : NAME` with the pointer `ArgN: … = ptr:… obj:[lo-hi]`
/// lines logged before it on the same (pid, runtime_tid) as its args (the allocation range
/// [obj_lo, obj_hi) of each: the store turns them into operands of the dispatch); runtime_error for `X: Returned hipErrorY : ` (not
/// hipSuccess or benign polled statuses); hsa_queue_error for queue aborts and `HW Exception
/// Error`; missing_code_object for `Cannot find the function:` and `hipErrorNoBinaryForGpu: …`
/// (+ listing attrs `devices`, `bundles`); alloc_failure (attrs in bytes). runtime_error and
/// missing_code_object repeats are folded (count) and emitted at finish() or kFoldLines after
/// their first line (closeFolded()).
std::unique_ptr<Matcher> makeHipLogMatcher();

}  // namespace gpufault
