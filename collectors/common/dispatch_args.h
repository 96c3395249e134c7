// Pointer arguments of a HIP dispatch (`Arg%d: %s %s = ptr:%p obj:[%p-%p]`, FORMATS.md §3.2):
// the parse, and the pending form that defers it until a sink needs the values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/evidence.h"

namespace gpufault {

/// Bytes of an `ArgN:` line's text (after the colon) that a pending entry holds at most; a
/// longer line is parsed at once.
inline constexpr size_t kMaxPendingArgText = 512;
/// Bytes of pending entries (heads and texts) one launch holds at most; a line that would pass
/// it is parsed at once, with the pending ones before it.
inline constexpr size_t kMaxPendingLaunch = 4096;
/// Bytes of an argument name kept.
inline constexpr size_t kMaxArgName = 256;

/// Parses one pointer argument line `Arg<index>:<decl> = <value>` (`value` starts with `ptr:`)
/// into `a`, every field set anew: the pointer (`0x…` or `(nil)`), the allocation range of
/// `obj:[lo-hi]` (right after the pointer, else anywhere in the value; left unset unless
/// complete) and the name (the last word of `decl`, ≤ kMaxArgName bytes, "" when none).
/// False when the value holds no pointer (then `a` is unspecified).
bool parseDispatchArg(int index, std::string_view decl, std::string_view value, DispatchArg& a);

/// What a parsed argument's `obj:[lo-hi]` gives: no range (none, or not complete), a range
/// [obj_lo, obj_hi), an empty one (lo == hi), one that ends below its start (wraps around 2^64:
/// obj_hi < obj_lo), one with a bound wider than 64 bits (obj_hi set, obj_lo not), one larger
/// than any GPU or CPU address space (more than kMaxObjBytes: a sentinel such as `-0xffff…`,
/// not an allocation). Only Ok makes an operand; the store warns for Inverted, Wide and Huge,
/// naming the dispatch's line.
enum class ObjRange { None, Ok, Empty, Inverted, Wide, Huge };
/// 2^48 bytes: the 48-bit virtual address space of gfx9+ GPUs (and more than x86-64's 47-bit
/// user space), so no allocation is larger.
inline constexpr uint64_t kMaxObjBytes = uint64_t{1} << 48;
ObjRange objRange(const DispatchArg& a);

/// A pending entry's head, followed by its text: the argument index, the offset of ` = ` in the
/// text, the text's length.
struct PendingArgHead {
    int32_t index;
    uint32_t eq;
    uint32_t len;
};

/// Appends one pending entry to `pending`: `text` is the line's message after `ArgN:` (at most
/// kMaxPendingArgText bytes) and `eq` the offset of its ` = ` (the value follows at eq + 3).
inline void appendPendingArg(std::string& pending, int index, std::string_view text, size_t eq) {
    const PendingArgHead head{index, static_cast<uint32_t>(eq), static_cast<uint32_t>(text.size())};
    const size_t at = pending.size(), size = at + sizeof head + text.size();
    // The size returned is `size`, not the operation's argument: GCC 12 passes the grown
    // capacity there when it reallocates.
    pending.resize_and_overwrite(size, [&](char* p, size_t) {
        std::memcpy(p + at, &head, sizeof head);
        if (!text.empty()) std::memcpy(p + at + sizeof head, text.data(), text.size());
        return size;
    });
}

/// Parses every entry of `pending` in order and appends those parseDispatchArg() accepts to
/// `out`: the same arguments, in the same order, as parsing each line when it was read.
void parsePendingArgs(std::string_view pending, std::vector<DispatchArg>& out);

/// Parses `d.pending_args` into `d.args` (after the args already there) and empties it.
void resolveArgs(Dispatch& d);

}  // namespace gpufault
