#include "collectors/common/dispatch_args.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>

#include "collectors/common/text.h"

namespace gpufault {

namespace {

std::optional<uint64_t> hexOrNil(std::string_view s, size_t* n) {
    if (s.size() >= 3 && s[0] == '0' && s[1] == 'x') return text::parseHex(s, n);
    if (s.starts_with("(nil)")) {
        *n = 5;
        return 0;
    }
    return std::nullopt;
}

/// True when `s` starts with `0x` and more hex digits than a 64-bit value holds (leading
/// zeros aside).
bool wideHex(std::string_view s) {
    if (s.size() < 3 || s[0] != '0' || s[1] != 'x') return false;
    size_t i = 2;
    while (i < s.size() && s[i] == '0') ++i;
    size_t d = 0;
    while (i + d < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + d]))) ++d;
    return d > 16;
}

/// A complete range with a bound wider than 64 bits: obj_hi set, obj_lo unset (objRange()).
void markWide(DispatchArg& a) {
    a.obj_lo.reset();
    a.obj_hi = 0;
}

/// Length of the `0x…` hex value at the start of `s` (0 when none).
size_t hexLength(std::string_view s) {
    if (s.size() < 3 || s[0] != '0' || s[1] != 'x') return 0;
    size_t i = 2;
    while (i < s.size() && std::isxdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i;
}

/// `lo-hi]` of `obj:[lo-hi]` into the arg's allocation range (left unset unless complete; one
/// wider than 64 bits is marked: markWide(); an inverted one is kept as printed).
void parseRange(std::string_view r, DispatchArg& a) {
    size_t n1 = 0, n2 = 0;
    auto lo = hexOrNil(r, &n1);
    if (!lo) {
        // `0x<more than 16 digits>-…]`: a range, but not of 64-bit addresses.
        size_t l = hexLength(r);
        if (l && wideHex(r) && r.substr(l, 1) == "-") {
            size_t h = hexLength(r.substr(l + 1));
            if (h && r.substr(l + 1 + h, 1) == "]") markWide(a);
        }
        return;
    }
    if (r.substr(n1, 1) != "-") return;
    auto hi = hexOrNil(r.substr(n1 + 1), &n2);
    if (!hi) {
        std::string_view h = r.substr(n1 + 1);
        size_t l = hexLength(h);
        if (l && wideHex(h) && h.substr(l, 1) == "]") markWide(a);
        return;
    }
    if (r.substr(n1 + 1 + n2, 1) != "]") return;
    a.obj_lo = lo;
    a.obj_hi = hi;
}

}  // namespace

bool parseDispatchArg(int index, std::string_view decl, std::string_view value, DispatchArg& a) {
    size_t n = 0;
    auto ptr = hexOrNil(value.substr(4), &n);
    if (!ptr) return false;
    a.index = index;
    a.ptr = *ptr;
    a.obj_lo.reset();
    a.obj_hi.reset();
    if (std::string_view r = value.substr(4 + n); r.starts_with(" obj:[")) {
        r.remove_prefix(6);  // the usual place: right after the pointer
        parseRange(r, a);
    } else if (size_t o = value.find("obj:["); o != std::string_view::npos) {
        parseRange(value.substr(o + 5), a);
    }
    // `%s %s` = type and name; either may be empty.
    decl = text::trim(decl);
    size_t sp = decl.rfind(' ');
    std::string_view name = sp == std::string_view::npos ? decl : decl.substr(sp + 1);
    a.name.assign(name.substr(0, std::min(name.size(), kMaxArgName)));
    return true;
}

void parsePendingArgs(std::string_view pending, std::vector<DispatchArg>& out) {
    size_t i = 0;
    while (i + sizeof(PendingArgHead) <= pending.size()) {
        PendingArgHead head;
        std::memcpy(&head, pending.data() + i, sizeof head);
        std::string_view text = pending.substr(i + sizeof head, head.len);
        i += sizeof head + head.len;
        DispatchArg& a = out.emplace_back();
        if (!parseDispatchArg(head.index, text.substr(0, head.eq), text.substr(head.eq + 3), a))
            out.pop_back();
    }
}

ObjRange objRange(const DispatchArg& a) {
    if (!a.obj_lo && !a.obj_hi) return ObjRange::None;
    if (!a.obj_lo) return ObjRange::Wide;
    if (*a.obj_hi < *a.obj_lo) return ObjRange::Inverted;
    if (*a.obj_hi == *a.obj_lo) return ObjRange::Empty;
    if (*a.obj_hi - *a.obj_lo > kMaxObjBytes) return ObjRange::Huge;
    return ObjRange::Ok;
}

void resolveArgs(Dispatch& d) {
    if (d.pending_args.empty()) return;
    parsePendingArgs(d.pending_args, d.args);
    d.pending_args.clear();
}

}  // namespace gpufault
