// Matcher for compute-sanitizer memcheck reports, FORMATS.md §9.5.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for compute-sanitizer memcheck reports, FORMATS.md §9.5 (NVIDIA Compute
/// Sanitizer docs "Understanding Memcheck Errors"; cuda-memcheck and 2021–2026 layouts).
/// Out: one Kind::SanitizerReport per `Invalid <segment> read|write|atomic of size N` report
/// (segment __global__, __shared__ or __local__; exact address, access (an atomic → `write` with
/// attr access_op=atomic), kernel as printed, attrs access_size/thread/block and the sanitizer's
/// nearest allocation). Holds one report in progress;
/// finish() emits a cut one.
std::unique_ptr<Matcher> makeSanitizerMatcher();

}  // namespace gpufault
