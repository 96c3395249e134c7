// Matcher for HIP/CUDA/PyTorch error text and math-library missing code objects, FORMATS.md
// §9.5, 9.6, 9.8.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for HIP/CUDA/PyTorch error text in program output (FORMATS.md §9.5, §9.6):
/// `(torch.)AcceleratorError|RuntimeError: CUDA|HIP error: TEXT` and bare `CUDA error: TEXT`
/// (TEXT mapped to the error name; a following ``Search for `NAME'`` line overrides), `hipErrorX`
/// / `cudaErrorX` tokens, compute-sanitizer `Program hit …` API errors, NCCL watchdog lines
/// (rank from LogLine.rank or `[rankN]:`) → runtime_error, or missing_code_object for
/// no-kernel-image / invalid-device-function errors and rocBLAS/hipBLASLt Tensile library
/// failures (§9.8, attr `target`). Benign polled statuses give nothing; AMD_LOG_LEVEL lines are
/// hip_log's. Identical records are folded (count) and emitted at finish() or kFoldLines
/// after their first line (closeFolded()).
std::unique_ptr<Matcher> makeRuntimeErrorMatcher();

}  // namespace gpufault
