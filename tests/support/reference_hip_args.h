// The HIP matcher's dispatch lines (`ArgN:`, `ShaderName :`) as they were parsed before the
// eighth speed round (every pointer line parsed when read), kept as the reference for the
// pending (lazy) arguments, and random, mutated streams of such lines to compare them on.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/evidence.h"
#include "collectors/common/text.h"

namespace gpufault::testing {

/// One AMD log line as the decoder delivers it (prefix fields set, message in `text`).
struct AmdDispatchLine {
    std::optional<int64_t> pid;
    std::string tid;
    int64_t us = 0;
    std::string text;
};

/// The eager HIP dispatch parse as it was before the eighth round: ArgN lines parsed when read,
/// per (pid, tid), 256 threads kept (least recently used evicted), 64 pointer args a launch.
class ReferenceHipArgs {
  public:
    /// One line (number `line`); a dispatch goes to `out`.
    void feed(uint64_t line, const AmdDispatchLine& l, std::vector<Dispatch>& out) {
        std::string_view m = l.text;
        if (m.starts_with("Arg")) return arg(l, m);
        if (m.starts_with("ShaderName : ")) return dispatch(line, l, m.substr(13), out);
        if (m.starts_with("Graph shader name : ")) return dispatch(line, l, m.substr(20), out);
    }

  private:
    struct ThreadArgs {
        std::optional<int64_t> pid;
        std::string tid;
        std::vector<DispatchArg> args;
        int last_index = -1;
        uint64_t used = 0;
    };

    static std::optional<uint64_t> hexOrNil(std::string_view s, size_t* n) {
        if (s.size() >= 3 && s[0] == '0' && s[1] == 'x') return text::parseHex(s, n);
        if (s.starts_with("(nil)")) {
            *n = 5;
            return 0;
        }
        return std::nullopt;
    }

    ThreadArgs& thread(const AmdDispatchLine& l) {
        ++tick_;
        for (ThreadArgs& t : threads_) {
            if (t.pid == l.pid && t.tid == l.tid) {
                t.used = tick_;
                return t;
            }
        }
        if (threads_.size() >= 256) {
            size_t lru = 0;
            for (size_t i = 1; i < threads_.size(); ++i)
                if (threads_[i].used < threads_[lru].used) lru = i;
            threads_.erase(threads_.begin() + static_cast<long>(lru));
        }
        threads_.push_back({l.pid, l.tid, {}, -1, tick_});
        return threads_.back();
    }

    void arg(const AmdDispatchLine& l, std::string_view s) {
        size_t n = 0;
        auto index = text::parseDec(s.substr(3), &n);
        const size_t colon = 3 + n;
        if (!index || *index < 0 || *index > 100000 || s.substr(colon, 1) != ":") return;
        size_t eq = s.find(" = ", colon);
        if (eq == std::string_view::npos) return;
        ThreadArgs& t = thread(l);
        if (*index <= t.last_index) t.args.clear();
        t.last_index = static_cast<int>(*index);
        std::string_view value = s.substr(eq + 3);
        if (!value.starts_with("ptr:") || t.args.size() >= 64) return;
        auto ptr = hexOrNil(value.substr(4), &n);
        if (!ptr) return;
        DispatchArg& a = t.args.emplace_back();
        a.index = static_cast<int>(*index);
        a.ptr = *ptr;
        if (std::string_view r = value.substr(4 + n); r.starts_with(" obj:[")) {
            r.remove_prefix(6);
            parseRange(r, a);
        } else if (size_t o = value.find("obj:["); o != std::string_view::npos) {
            parseRange(value.substr(o + 5), a);
        }
        std::string_view decl = text::trim(s.substr(colon + 1, eq - (colon + 1)));
        size_t sp = decl.rfind(' ');
        std::string_view name = sp == std::string_view::npos ? decl : decl.substr(sp + 1);
        if (!name.empty()) a.name.assign(name.substr(0, std::min<size_t>(name.size(), 256)));
    }

    static void parseRange(std::string_view r, DispatchArg& a) {
        size_t n1 = 0, n2 = 0;
        auto lo = hexOrNil(r, &n1);
        if (!lo || r.substr(n1, 1) != "-") return;
        auto hi = hexOrNil(r.substr(n1 + 1), &n2);
        if (!hi || r.substr(n1 + 1 + n2, 1) != "]") return;
        a.obj_lo = lo;
        a.obj_hi = hi;
    }

    void dispatch(uint64_t line,
                  const AmdDispatchLine& l,
                  std::string_view name,
                  std::vector<Dispatch>& out) {
        name = text::trim(name);
        if (name.empty()) return;
        ThreadArgs& t = thread(l);
        Dispatch& d = out.emplace_back();
        d.line = line;
        d.time.runtime_us = l.us;
        d.pid = l.pid;
        d.runtime_tid = l.tid;
        d.kernel = std::string(name);
        d.args = std::move(t.args);
        t.args.clear();
        t.last_index = -1;
    }

    std::vector<ThreadArgs> threads_;
    uint64_t tick_ = 0;
};

/// A random stream of `n` dispatch-context lines over `threads` (pid, tid) pairs: launches of
/// `Arg0: = val:` and pointer lines (`ptr:0x… obj:[…-…]`, `(nil)`, no or a later `obj:[`, long
/// hex runs, long names and texts, up to 80 pointer args, indices going back), one byte in
/// eight lines mutated (replaced, inserted or cut at a random place, often by a byte the
/// parse looks at), then `ShaderName :` / `Graph shader name :` lines (some blank).
inline std::vector<AmdDispatchLine> randomDispatchLines(uint32_t seed, int threads, int n) {
    std::mt19937_64 rng(seed);
    auto pick = [&rng](size_t k) { return static_cast<size_t>(rng() % k); };
    auto hex = [&](size_t digits) {
        std::string h;
        for (size_t i = 0; i < digits; ++i) h += "0123456789abcdefABCDEF"[pick(i == 0 ? 15 : 22)];
        return h;
    };
    auto ptrText = [&]() -> std::string {
        switch (pick(12)) {
            case 0:
                return "(nil)";
            case 1:
                return "0x" + hex(1 + pick(20));  // also runs longer than 16 digits
            case 2:
                return "0x";
            default:
                return "0x7f" + hex(10);
        }
    };
    const std::string_view mutations = "0x-] =[(nil):obj9fgG\t";
    std::vector<AmdDispatchLine> out;
    std::vector<int> nextIndex(static_cast<size_t>(threads), 0);
    while (static_cast<int>(out.size()) < n) {
        const int t = static_cast<int>(pick(static_cast<size_t>(threads)));
        AmdDispatchLine l;
        if (t % 5 != 4) l.pid = 100 + t % 3;
        l.tid = t % 7 == 6 ? "" : fmt::format("0x7f{:x}", t * 2654435761u % 100000);
        if (t % 11 == 10) l.tid = fmt::format("0x{:x}", 0x7f0a1b2c3d4e5f60ull + t);  // 18 bytes
        l.us = static_cast<int64_t>(out.size()) * 10;
        int& next = nextIndex[static_cast<size_t>(t)];
        const size_t what = pick(t % 13 == 0 ? 400 : 20);  // some launches pass 64 args
        if (what < 3) {                                    // the launch ends
            std::string name = pick(2) ? "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_SN_" + hex(pick(9))
                                       : "_Z9vectoraddPfS_S_i";
            if (pick(20) == 0) name = pick(2) ? "" : "  ";
            l.text = (pick(10) ? "ShaderName : " : "Graph shader name : ") + name;
            next = 0;
        } else {
            int index = next;
            if (t % 13 != 0 && pick(30) == 0) index = static_cast<int>(pick(4));  // a new launch
            next = index + 1 + (pick(8) == 0 ? 1 : 0);
            if (pick(200) == 0) index = 100001;  // out of range (the launch goes on)
            std::string decl = pick(5) == 0 ? " " : pick(2) ? " float* a" : " void* p" + hex(2);
            if (pick(40) == 0) decl = " float* " + std::string(250 + pick(20), 'n');
            if (pick(4) == 0) {
                l.text = fmt::format("Arg{}:{} = val:{}", index, decl, pick(1000));
            } else {
                std::string v = "ptr:" + ptrText();
                switch (pick(10)) {
                    case 0:
                        break;  // no range
                    case 1:
                        v += " x obj:[0x" + hex(8) + "-0x" + hex(8) + "]";
                        break;  // later
                    case 2:
                        v += " obj:[(nil)-0x" + hex(6) + "]";
                        break;
                    case 3:
                        v += " obj:[0x" + hex(6) + "-0x" + hex(6);
                        break;  // cut
                    default:
                        v += " obj:[0x7f" + hex(10) + "-0x7f" + hex(10) + "]";
                        break;
                }
                if (pick(50) == 0) v += " " + std::string(520 + pick(40), 'z');  // long text
                l.text = fmt::format("Arg{}:{} = {}", index, decl, v);
            }
            if (pick(8) == 0) {
                const size_t at = pick(l.text.size() + 1);
                const char c = mutations[pick(mutations.size())];
                switch (pick(3)) {
                    case 0:
                        if (at < l.text.size()) l.text[at] = c;
                        break;
                    case 1:
                        l.text.insert(at, 1, c);
                        break;
                    default:
                        l.text.erase(at, 1 + pick(4));
                        break;
                }
            }
        }
        out.push_back(std::move(l));
    }
    return out;
}

}  // namespace gpufault::testing
