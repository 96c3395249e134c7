// Matcher for operand probe lines and canonical gpufault.operand lines.
#pragma once

#include <memory>

#include "collectors/common/log_line.h"

namespace gpufault {

/// A new matcher for operand lines: `[tag] key=value …` probe lines with `ptr=` and one of `end=`,
/// `size=`, `bytes=`, `nbytes=` (bytes; name from `name=`, else the tag; shape/stride/dtype kept,
/// values may be `(…)`/`[…]` with spaces) → Operand origin "probe"; `gpufault.operand name=…
/// ptr=… end=…|size=…` → origin "canonical". `end` wins over `bytes` (a mismatch is a warning);
/// `end` below `ptr`, a size that takes ptr + size past 2^64, or (without `end`) a size that is
/// no byte count (`1.5GiB`, ≥ 2^64), and on a line with a size or end a `ptr`/`end` that is no
/// number, makes no operand and a warning naming the line; a `pid=` that is no pid (0..2^22) is
/// a warning and the operand is kept without one. ANSI colour sequences separate tokens.
/// `[access]`, `[check]`, `[param]` lines are never operands. Emits no evidence.
std::unique_ptr<Matcher> makeOperandProbeMatcher();

}  // namespace gpufault
