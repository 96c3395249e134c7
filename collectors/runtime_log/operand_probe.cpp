// Operand lines printed by programs: probe lines `[tag] key=value …` with `ptr=` and a size or
// end, and the canonical `gpufault.operand name=… ptr=0x… end=0x…|size=N …`. FORMATS.md has no
// producer source for probe lines: the shape is generalized from all probe lines seen.
#include "collectors/runtime_log/operand_probe.h"

#include <cstdint>
#include <string>

#include "collectors/common/text.h"
#include "collectors/runtime_log/runtime_common.h"

namespace gpufault {

namespace {

constexpr size_t kMaxValue = 256;  // bytes kept of a shape/stride/dtype/name value

struct Fields {
    std::string_view name, ptr, end, size, bytes, nbytes, shape, stride, dtype, pid;
    std::string_view repeated;  ///< the first of name/ptr/end/size/bytes/nbytes/pid given twice
};

bool isKeyChar(char c) {
    return rt::isIdentChar(c) || c == '.';
}
bool isTagChar(char c) {
    return rt::isIdentChar(c) || c == '.' || c == '-';
}

/// Length of the ANSI CSI sequence (`ESC [ params final`) at `i`, 0 when none starts there:
/// coloured output ends a value with `ESC[0m` (`size=4096\x1b[0m`).
size_t csiLength(std::string_view s, size_t i) {
    if (i + 1 >= s.size() || s[i] != '\x1b' || s[i + 1] != '[') return 0;
    size_t k = i + 2;
    while (k < s.size() && s[k] >= 0x20 && s[k] <= 0x3f) ++k;  // parameter/intermediate bytes
    return k < s.size() && s[k] >= 0x40 && s[k] <= 0x7e ? k + 1 - i : 0;
}

/// Splits `key=value` tokens; a value may be `(…)`/`[…]` (with spaces and commas) or `"…"`.
/// Colour sequences separate tokens as blanks do.
Fields parseFields(std::string_view s) {
    Fields f;
    unsigned seen = 0;  // bits of the keys that make the operand, as met
    size_t i = 0;
    while (i < s.size()) {
        for (size_t c; i < s.size();) {
            if (s[i] == ' ' || s[i] == '\t')
                ++i;
            else if ((c = csiLength(s, i)) > 0)
                i += c;
            else
                break;
        }
        size_t k = i;
        while (k < s.size() && isKeyChar(s[k])) ++k;
        if (k == i || k >= s.size() || s[k] != '=') {  // not a key=value token: skip it
            while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
            continue;
        }
        std::string_view key = s.substr(i, k - i);
        size_t v = k + 1;
        while (size_t c = csiLength(s, v)) v += c;  // `name=\x1b[32mW`
        size_t e = v;
        if (e < s.size() && (s[e] == '(' || s[e] == '[')) {
            int depth = 0;
            for (; e < s.size(); ++e) {
                if (s[e] == '(' || s[e] == '[') ++depth;
                if ((s[e] == ')' || s[e] == ']') && --depth == 0) {
                    ++e;
                    break;
                }
            }
        } else if (e < s.size() && s[e] == '"') {
            size_t q = s.find('"', e + 1);
            e = q == std::string_view::npos ? s.size() : q + 1;
        } else {
            while (e < s.size() && s[e] != ' ' && s[e] != '\t' && csiLength(s, e) == 0) ++e;
        }
        std::string_view val = s.substr(v, e - v);
        // Which of two values was meant cannot be told (hostile review 17, i2 LOW 5: the
        // second `ptr=` was taken without a word): the line is refused, naming the key.
        auto take = [&](std::string_view& slot, unsigned bit) {
            if ((seen & bit) && f.repeated.empty()) f.repeated = key;
            seen |= bit;
            slot = val;
        };
        if (key == "name")
            take(f.name, 1);
        else if (key == "ptr")
            take(f.ptr, 2);
        else if (key == "end")
            take(f.end, 4);
        else if (key == "size")
            take(f.size, 8);
        else if (key == "bytes")
            take(f.bytes, 16);
        else if (key == "nbytes")
            take(f.nbytes, 32);
        else if (key == "shape")
            f.shape = val;
        else if (key == "stride")
            f.stride = val;
        else if (key == "dtype")
            f.dtype = val;
        else if (key == "pid")
            take(f.pid, 64);
        i = e;
    }
    return f;
}

/// `0x…` hex or decimal (with `,` grouping); the whole value must be used.
std::optional<uint64_t> number(std::string_view v) {
    size_t n = 0;
    if (v.starts_with("0x") || v.starts_with("0X")) {
        auto h = text::parseHex(v, &n);
        return h && n == v.size() ? h : std::nullopt;
    }
    auto d = text::parseGroupedDec(v, &n);
    return d && n == v.size() ? d : std::nullopt;
}

std::optional<std::string> kept(std::string_view v) {
    if (v.empty()) return std::nullopt;
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return std::string(v.substr(0, std::min(v.size(), kMaxValue)));
}

/// The `[tag]` that opens the key=value part before `limit` (`[dequant_probe] shape=…`), as
/// position after `] `; the tag in `*tag`. `[rank0]:`-style prefixes are skipped.
std::optional<size_t> findTag(std::string_view t, size_t limit, std::string_view* tag) {
    std::optional<size_t> found;
    for (size_t b = t.find('['); b != std::string_view::npos && b < limit; b = t.find('[', b + 1)) {
        size_t e = b + 1;
        while (e < t.size() && isTagChar(t[e])) ++e;
        if (e == b + 1 || e >= t.size() || t[e] != ']') continue;
        if (b > 0 && std::string_view(" \t:]>|").find(t[b - 1]) == std::string_view::npos)
            continue;  // `shape=[2]` is a value, not a tag
        if (e + 1 < t.size() && t[e + 1] != ' ' && t[e + 1] != '\t') continue;
        *tag = t.substr(b + 1, e - b - 1);
        found = e + 1;
    }
    return found;
}

class OperandProbeMatcher final : public Matcher {
  public:
    void feed(const LogLine& l, Sink& out) override {
        size_t p = l.text.find("ptr=");
        if (p == std::string_view::npos) return;
        std::string_view t = l.text;
        if (size_t c = t.find("gpufault.operand "); c != std::string_view::npos && c < p)
            return operand(l, parseFields(t.substr(c + 17)), "canonical", "operand", out);
        std::string_view tag;
        auto start = findTag(t, p, &tag);
        if (!start || tag == "access" || tag == "check" || tag == "param") return;
        operand(l, parseFields(t.substr(*start)), "probe", tag, out);
    }

  private:
    static std::string cut(std::string_view v) {
        return std::string(v.substr(0, std::min(v.size(), size_t{64})));
    }
    /// A value the line gives that is not what its key needs: the line makes no operand.
    static void refused(const LogLine& l,
                        const std::string& name,
                        std::string_view key,
                        std::string_view v,
                        std::string_view what,
                        Sink& out) {
        out.warning({l.line,
                     "operand " + name + ": " + std::string(key) + "=" + cut(v) + " is not " +
                         std::string(what) + " (hex or decimal below 2^64); line ignored"});
    }

    void operand(const LogLine& l,
                 const Fields& f,
                 const char* origin,
                 std::string_view fallback,
                 Sink& out) {
        std::string name(f.name.empty() ? fallback : f.name);
        bool sized = !f.end.empty() || !f.size.empty() || !f.bytes.empty() || !f.nbytes.empty();
        if (!f.repeated.empty() && sized) {
            out.warning({l.line,
                         "operand " + name + ": repeated key '" + std::string(f.repeated) +
                             "' (which value is meant cannot be told); line ignored"});
            return;
        }
        auto ptr = number(f.ptr);
        if (!ptr) {  // a line with a size says it is an operand: its bad ptr is worth a word
            if (sized) refused(l, name, "ptr", f.ptr, "an address", out);
            return;
        }
        if (!f.end.empty() && !number(f.end)) return refused(l, name, "end", f.end, "an address", out);
        std::optional<uint64_t> bytes;
        for (auto v : {f.bytes, f.nbytes})
            if (!bytes && !v.empty()) bytes = number(v);
        std::optional<uint64_t> size = f.size.empty() ? std::nullopt : number(f.size);
        uint64_t end = 0;
        if (auto e = f.end.empty() ? std::nullopt : number(f.end)) {
            end = *e;
            if (end < *ptr) {
                out.warning({l.line, "operand " + name + ": end is below ptr; line ignored"});
                return;
            }
            if (bytes && end - *ptr != *bytes) {
                out.warning({l.line,
                             "operand " + name + ": end=" + text::hexAddr(end) +
                                 " and bytes=" + std::to_string(*bytes) + " disagree; end kept"});
            }
        } else if (bytes || size) {
            uint64_t n = bytes ? *bytes : *size;
            if (n > UINT64_MAX - *ptr) {  // [ptr, ptr + n) would pass the top of the 64-bit space
                out.warning({l.line,
                             "operand " + name + ": ptr=" + text::hexAddr(*ptr) + " plus " +
                                 std::to_string(n) +
                                 " bytes passes the end of the 64-bit address space; line "
                                 "ignored"});
                return;
            }
            end = *ptr + n;
        } else {
            for (auto [key, v] : {std::pair{"size", f.size},
                                  std::pair{"bytes", f.bytes},
                                  std::pair{"nbytes", f.nbytes}})
                if (!v.empty()) return refused(l, name, key, v, "a byte count", out);
            return;
        }
        Operand o;
        o.line = l.line;
        o.time = l.time;
        if (!f.pid.empty()) {
            if (auto v = number(f.pid); v && *v <= (uint64_t{1} << 22))
                o.pid = static_cast<int64_t>(*v);  // never a wrapped, negative pid
            else
                out.warning({l.line,
                             "operand " + name + ": pid=" + cut(f.pid) +
                                 " is not a pid (0..2^22); stored without a pid"});
        }
        o.name = name.substr(0, std::min(name.size(), kMaxValue));
        o.ptr = *ptr;
        o.end = end;
        o.shape = kept(f.shape);
        o.stride = kept(f.stride);
        o.dtype = kept(f.dtype);
        o.origin = origin;
        o.rank = rt::rankOf(l);
        out.operand(std::move(o));
    }
};

}  // namespace

std::unique_ptr<Matcher> makeOperandProbeMatcher() {
    return std::make_unique<OperandProbeMatcher>();
}

}  // namespace gpufault
