// Container and wrapper prefixes (FORMATS.md §9.4); see container.h.
#include "collectors/prefix/container.h"

#include <nlohmann/json.hpp>

#include "collectors/prefix/scan.h"
#include "collectors/prefix/timestamp.h"

namespace gpufault::prefix {

namespace {

/// Skips ANSI CSI sequences (`ESC [ params letter`), as compose colours its prefixes.
void skipAnsi(Cursor& c) {
    while (c.peek() == '\x1b' && c.peek(1) == '[') {
        size_t k = c.i + 2;
        while (k < c.s.size() && k - c.i < 16 && !isAlpha(c.s[k])) ++k;
        if (k >= c.s.size() || !isAlpha(c.s[k])) return;
        c.i = k + 1;
    }
}

struct ComposeShape {
    size_t len = 0;      ///< prefix bytes, colour codes included
    size_t bar_col = 0;  ///< offset of the `|`
    bool indexed = false;
    bool padded = false;  ///< ≥ 2 spaces: v2 pads the name to the longest + 1, then ` | `
};

/// `NAME<spaces>| ` with NAME = `[A-Za-z0-9][A-Za-z0-9_.-]*`.
std::optional<ComposeShape> composeShape(std::string_view s) {
    Cursor c{s};
    skipAnsi(c);
    size_t start = c.i;
    if (!isAlnum(c.peek())) return std::nullopt;
    while ((isAlnum(c.peek()) || c.peek() == '_' || c.peek() == '.' || c.peek() == '-') &&
           c.i - start <= 96)
        ++c.i;
    std::string_view name = s.substr(start, c.i - start);
    size_t pad = c.spaces();
    if (pad == 0) return std::nullopt;
    ComposeShape sh;
    sh.padded = pad >= 2;
    sh.bar_col = c.i;
    if (!c.eat('|') || !(c.eat(' ') || c.done())) return std::nullopt;
    skipAnsi(c);
    sh.len = c.i;
    size_t d = name.size();
    while (d > 0 && isDigit(name[d - 1])) --d;
    sh.indexed = d < name.size() && d >= 2 && (name[d - 1] == '-' || name[d - 1] == '_');
    return sh;
}

std::optional<int64_t> intField(const nlohmann::json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end()) return std::nullopt;
    if (it->is_number_integer()) return it->get<int64_t>();
    if (it->is_string()) {
        const auto& s = it->get_ref<const std::string&>();
        Cursor c{s};
        int64_t v = 0;
        if (c.number(v, 1, 18) && c.done()) return v;
    }
    return std::nullopt;
}

void appendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
        out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
}

/// `\uXXXX` at `c` (after the `\u`): the code unit, or -1.
int32_t hex4(Cursor& c) {
    int32_t v = 0;
    for (int k = 0; k < 4; ++k) {
        char h = c.peek();
        int d = isDigit(h)               ? h - '0'
                : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                         : -1;
        if (d < 0 || c.done()) return -1;
        v = v * 16 + d;
        ++c.i;
    }
    return v;
}

/// A JSON string body after its opening quote, decoded into `out`; false on anything unusual
/// (the caller then falls back to the full parser).
bool jsonString(Cursor& c, std::string& out) {
    out.clear();
    for (;;) {
        size_t start = c.i;
        while (!c.done() && c.peek() != '"' && c.peek() != '\\' &&
               static_cast<unsigned char>(c.peek()) >= 0x20)
            ++c.i;
        out.append(c.s.substr(start, c.i - start));
        if (c.eat('"')) return true;
        if (!c.eat('\\')) return false;  // end of line or a raw control byte
        char e = c.peek();
        ++c.i;
        switch (e) {
            case 'n':
                out.push_back('\n');
                break;
            case 'r':
                out.push_back('\r');
                break;
            case 't':
                out.push_back('\t');
                break;
            case 'b':
                out.push_back('\b');
                break;
            case 'f':
                out.push_back('\f');
                break;
            case '"':
            case '\\':
            case '/':
                out.push_back(e);
                break;
            case 'u': {
                int32_t u = hex4(c);
                if (u < 0 || (u >= 0xdc00 && u <= 0xdfff)) return false;
                if (u >= 0xd800 && u <= 0xdbff) {
                    if (!c.eat("\\u")) return false;
                    int32_t lo = hex4(c);
                    if (lo < 0xdc00 || lo > 0xdfff) return false;
                    u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                }
                appendUtf8(out, static_cast<uint32_t>(u));
                break;
            }
            default:
                return false;
        }
    }
}

/// Docker json-file's fixed layout `{"log":"…","stream":"…","time":"…"}` (moby jsonlogbytes.go
/// MarshalJSONBuf(), no `attrs`), without building a DOM: the common case at full speed.
bool dockerJsonFast(std::string_view obj, JsonPayload& p) {
    Cursor c{obj};
    // `stream` and `time` never hold escapes: take their bytes up to the closing quote.
    auto plain = [&c](std::string_view& v) {
        size_t start = c.i;
        while (!c.done() && c.peek() != '"' && c.peek() != '\\') ++c.i;
        v = c.s.substr(start, c.i - start);
        return c.eat('"');
    };
    std::string_view stream, time;
    if (!c.eat("{\"log\":\"") || !jsonString(c, p.text)) return false;
    if (c.eat(",\"stream\":\"") && !plain(stream)) return false;
    if (!c.eat(",\"time\":\"") || !plain(time) || !c.eat('}') || !c.done()) return false;
    p.docker_stream = stream == "stderr" ? 1 : stream == "stdout" ? 0 : -1;
    if (auto st = scanIsoStamp(time, true)) {
        p.wall = stampWall(*st);
        p.wall_utc_s = zonedEpoch(*st);
    }
    return true;
}

}  // namespace

std::optional<CriHeader> parseCriHeader(std::string_view line) {
    if (line.size() < 30 || !isDigit(line[0])) return std::nullopt;
    auto st = scanIsoStamp(line);
    if (!st || st->sep != 'T' || !st->zone) return std::nullopt;
    Cursor c{line, st->len};
    CriHeader h;
    if (c.eat(" stderr ")) {
        h.is_stderr = true;
    } else if (!c.eat(" stdout ")) {
        return std::nullopt;
    }
    if (c.eat('P')) {
        h.partial = true;
    } else if (!c.eat('F')) {
        return std::nullopt;
    }
    if (c.eat(':'))  // further tags, `F:x`
        while (!c.done() && c.peek() != ' ') ++c.i;
    if (!(c.eat(' ') || c.done())) return std::nullopt;
    h.content_offset = c.i;
    h.wall = stampWall(*st);
    h.wall_utc_s = zonedEpoch(*st);
    return h;
}

bool parseJsonLine(std::string_view line, JsonPayload& p) {
    size_t b = 0;
    while (b < line.size() && (line[b] == ' ' || line[b] == '\t')) ++b;
    if (b >= line.size() || line[b] != '{') return false;
    std::string_view obj = line.substr(b);
    if (obj.ends_with(',')) obj.remove_suffix(1);  // a record inside a JSON array (dmesg -J)
    if (obj.empty() || obj.back() != '}') return false;
    p.text.clear();  // keeps its capacity from line to line
    p.wall.reset();
    p.wall_utc_s.reset();
    p.kernel_s.reset();
    p.origin = Origin::Unknown;
    p.ident.clear();
    p.ident_pid.reset();
    p.docker_stream = -1;
    if (obj.starts_with("{\"log\":\"") && dockerJsonFast(obj, p)) return true;

    auto j = nlohmann::json::parse(obj.data(), obj.data() + obj.size(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return false;
    bool found = false;
    for (const char* key : {"log", "MESSAGE", "message", "msg", "data"}) {
        auto it = j.find(key);
        if (it == j.end()) continue;
        if (it->is_string()) {
            p.text = it->get_ref<const std::string&>();
        } else if (it->is_array()) {  // journald JSON: non-UTF-8 fields are arrays of bytes
            p.text.clear();
            for (const auto& v : *it) {
                if (!v.is_number_unsigned() || v.get<uint64_t>() > 255) return false;
                p.text.push_back(static_cast<char>(v.get<uint64_t>()));
            }
        } else {
            continue;
        }
        found = true;
        if (auto st = j.find("stream");
            it->is_string() && key == std::string_view("log") && st != j.end() && st->is_string())
            p.docker_stream = *st == "stderr" ? 1 : *st == "stdout" ? 0 : -1;
        break;
    }
    if (!found) return false;

    if (auto it = j.find("time"); it != j.end()) {
        if (it->is_string()) {  // Docker: RFC3339Nano
            if (auto st = scanIsoStamp(it->get_ref<const std::string&>(), true)) {
                p.wall = stampWall(*st);
                p.wall_utc_s = zonedEpoch(*st);
            }
        } else if (it->is_number() && j.contains("msg")) {  // dmesg -J: printk seconds
            p.kernel_s = it->get<double>();
            p.origin = Origin::Kernel;
            if (auto pri = intField(j, "pri"); pri && (*pri >> 3) != 0) p.origin = Origin::Other;
            if (auto fac = j.find("fac"); fac != j.end() && fac->is_string())
                p.origin =
                    fac->get_ref<const std::string&>() == "kern" ? Origin::Kernel : Origin::Other;
        }
    }
    if (auto it = j.find("SYSLOG_IDENTIFIER"); it != j.end() && it->is_string()) {
        p.ident = it->get_ref<const std::string&>();
        p.origin = p.ident == "kernel" ? Origin::Kernel : Origin::Other;
    }
    if (auto t = j.find("_TRANSPORT"); t != j.end() && t->is_string() && *t == "kernel")
        p.origin = Origin::Kernel;
    if (!p.ident.empty()) {
        p.ident_pid = intField(j, "_PID");
        if (!p.ident_pid) p.ident_pid = intField(j, "SYSLOG_PID");
    }
    if (p.origin == Origin::Kernel && !p.kernel_s)
        if (auto us = intField(j, "_SOURCE_MONOTONIC_TIMESTAMP"))
            p.kernel_s = static_cast<double>(*us) / 1e6;
    if (auto us = intField(j, "__REALTIME_TIMESTAMP"); us && !p.wall) {
        int64_t secs = *us >= 0 ? *us / 1000000 : -((-*us + 999999) / 1000000);
        p.wall = formatWall(civilFromEpoch(secs));
        if (p.wall) p.wall_utc_s = secs;
    }
    return true;
}

void ComposePrefix::other() {
    if (!on_ && lines_ >= kDetectLines) return;
    if (!on_) ++lines_;
    weak_col_ = 0;
}

size_t ComposePrefix::strip(std::string_view line) {
    if (!on_ && lines_ >= kDetectLines) return 0;
    if (!on_) ++lines_;
    auto sh = composeShape(line);
    if (!sh) {
        weak_col_ = 0;
        return 0;
    }
    if (on_) return sh->len;
    if (sh->indexed || (sh->padded && weak_col_ == sh->bar_col)) {
        on_ = true;
        return sh->len;
    }
    weak_col_ = sh->padded ? sh->bar_col : 0;
    return 0;
}

}  // namespace gpufault::prefix
