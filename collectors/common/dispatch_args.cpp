#include "collectors/common/dispatch_args.h"

#include <algorithm>
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

/// `lo-hi]` of `obj:[lo-hi]` into the arg's allocation range (left unset unless complete).
void parseRange(std::string_view r, DispatchArg& a) {
    size_t n1 = 0, n2 = 0;
    auto lo = hexOrNil(r, &n1);
    if (!lo || r.substr(n1, 1) != "-") return;
    auto hi = hexOrNil(r.substr(n1 + 1), &n2);
    if (!hi || r.substr(n1 + 1 + n2, 1) != "]") return;
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

void resolveArgs(Dispatch& d) {
    if (d.pending_args.empty()) return;
    parsePendingArgs(d.pending_args, d.args);
    d.pending_args.clear();
}

}  // namespace gpufault
