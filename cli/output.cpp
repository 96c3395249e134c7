#include "cli/output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "collectors/common/text.h"

namespace gpufault::cli {

namespace {
size_t displayWidth(const std::string& s) {
    size_t w = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++w;  // count UTF-8 lead bytes
    return w;
}
}  // namespace

std::string printable(std::string_view s, bool keep_tab) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            if ((c < 0x20 && !(keep_tab && c == '\t')) || c == 0x7f)
                out += fmt::format("\\x{:02x}", c);
            else
                out += static_cast<char>(c);
            ++i;
            continue;
        }
        size_t n = text::utf8Length(s.substr(i));
        if (n == 0) {  // not UTF-8: a raw 0x9b is CSI to an 8-bit terminal
            out += fmt::format("\\x{:02x}", c);
            ++i;
            continue;
        }
        auto b1 = static_cast<unsigned char>(s[i + 1]);
        auto b2 = n > 2 ? static_cast<unsigned char>(s[i + 2]) : 0;
        // C1 controls (U+0080–U+009F: CSI, OSC to a UTF-8 terminal) and the bidirectional
        // overrides and isolates (U+202A–U+202E, U+2066–U+2069), which reorder what is shown.
        bool c1 = c == 0xC2 && b1 <= 0x9F;
        bool bidi = c == 0xE2 && ((b1 == 0x80 && b2 >= 0xAA && b2 <= 0xAE) ||
                                  (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9));
        if (c1)
            out += fmt::format("\\u{:04x}", b1);
        else if (bidi)
            out += fmt::format("\\u{:04x}", ((c & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F));
        else
            out.append(s.substr(i, n));
        i += n;
    }
    return out;
}

void TextTable::print(std::FILE* out) const {
    TextTable safe{{}, {}};  // cells from logs must not drive the terminal or break rows
    for (const auto& h : header) safe.header.push_back(printable(h));
    for (const auto& r : rows) {
        safe.rows.emplace_back();
        for (const auto& c : r) safe.rows.back().push_back(printable(c));
    }
    safe.printSafe(out);
}

void TextTable::printSafe(std::FILE* out) const {
    bool tty = ::isatty(::fileno(out));
    if (!tty) {
        auto line = [&](const std::vector<std::string>& cells) {
            for (size_t i = 0; i < cells.size(); ++i)
                fmt::print(out, "{}{}", i ? "\t" : "", cells[i]);
            fmt::print(out, "\n");
        };
        line(header);
        for (auto& r : rows) line(r);
        return;
    }
    std::vector<size_t> w(header.size(), 0);
    for (size_t i = 0; i < header.size(); ++i) w[i] = displayWidth(header[i]);
    for (auto& r : rows)
        for (size_t i = 0; i < r.size() && i < w.size(); ++i)
            w[i] = std::max(w[i], displayWidth(r[i]));
    auto line = [&](const std::vector<std::string>& cells) {
        std::string s;
        for (size_t i = 0; i < cells.size(); ++i) {
            s += cells[i];
            if (i + 1 < cells.size()) s += std::string(w[i] - displayWidth(cells[i]) + 2, ' ');
        }
        fmt::print(out, "{}\n", s);
    };
    line(header);
    for (auto& r : rows) line(r);
}

void printJsonLine(std::FILE* out, const nlohmann::json& j) {
    fmt::print(out, "{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string addr16(uint64_t a) {
    return fmt::format("0x{:016x}", a);
}

namespace {
std::string bytesText(uint64_t mag, const std::string& sign) {
    std::string digits = std::to_string(mag), grouped;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) grouped += ',';
        grouped += digits[i];
    }
    double d = static_cast<double>(mag);
    std::string unit;
    if (mag >= (1ull << 30))
        unit = fmt::format(" ({}{:.2f} GiB)", sign, d / (1ull << 30));
    else if (mag >= (1ull << 20))
        unit = fmt::format(" ({}{:.2f} MiB)", sign, d / (1ull << 20));
    else if (mag >= (1ull << 10))
        unit = fmt::format(" ({}{:.2f} KiB)", sign, d / (1ull << 10));
    return fmt::format("{}{} B{}", sign, grouped, unit);
}
}  // namespace

std::string humanBytes(int64_t b) {
    uint64_t mag = b < 0 ? static_cast<uint64_t>(-(b + 1)) + 1 : static_cast<uint64_t>(b);
    return bytesText(mag, b < 0 ? "-" : b > 0 ? "+" : "");
}

std::string aboveEndText(int64_t d) {
    if (d == 0) return "+0 B above end (the first byte past it)";
    return humanBytes(d) + " above end";
}

std::string alignmentText(uint64_t a) {
    if (a == 0) return "NULL pointer";
    std::string near = a < 0x200000 ? " — near NULL (first 2 MiB)" : "";
    return fmt::format("2 MiB aligned: {} (low {} bits zero){}",
                       a % 0x200000 == 0 ? "yes" : "no",
                       __builtin_ctzll(a),
                       near);
}

std::string approxSpanText(bool inside,
                           bool below,
                           const std::optional<int64_t>& distance,
                           const std::optional<int64_t>& from_ptr) {
    if (inside && !from_ptr) return "page start inside (exact byte unknown)";
    if (inside)
        return fmt::format("page start inside, {} from ptr (exact byte unknown)",
                           humanBytes(*from_ptr));
    if (!distance)
        return below ? "page start 2^63 B or more below ptr" : "page start 2^63 B or more above end";
    // +0 as the exact form writes it (`+0 B above end`): humanBytes gives 0 no sign.
    return fmt::format("page start {} {} (exact byte unknown)",
                       *distance == 0 ? "+0 B" : humanBytes(*distance),
                       below ? "below ptr" : "above end");
}

std::string printableLines(std::string_view s) {
    std::string out;
    size_t start = 0;
    while (start <= s.size()) {
        size_t e = s.find('\n', start);
        out += printable(
            s.substr(start, e == std::string_view::npos ? std::string_view::npos : e - start),
            true);
        if (e == std::string_view::npos) break;
        out += '\n';
        start = e + 1;
    }
    return out;
}

namespace {
/// The longest run of backticks in `s`.
size_t longestBacktickRun(std::string_view s) {
    size_t best = 0, run = 0;
    for (char c : s) {
        run = c == '`' ? run + 1 : 0;
        best = std::max(best, run);
    }
    return best;
}
}  // namespace

std::string mdText(std::string_view s) {
    std::string out;
    for (char c : printable(s)) {
        if (c == '&')
            out += "&amp;";
        else if (c == '<')
            out += "&lt;";
        else if (c == '>')
            out += "&gt;";
        else if (c == '\\' || c == '`' || c == '[' || c == ']')
            out += {'\\', c};
        else
            out += c;
    }
    return out;
}

std::string mdCode(std::string_view s) {
    std::string body = printable(s);
    std::string tick(longestBacktickRun(body) + 1, '`');
    bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
    return tick + (pad ? " " : "") + body + (pad ? " " : "") + tick;
}

std::string mdCell(std::string_view s) {
    // GFM splits a row at a `|` not taken by a backslash pair (`\\` is a pair): a `|` gets a
    // backslash unless an odd run of them already escapes it.
    std::string out;
    size_t backslashes = 0;
    for (char c : s) {
        if (c == '|' && backslashes % 2 == 0) out += '\\';
        out += c;
        backslashes = c == '\\' ? backslashes + 1 : 0;
    }
    return out;
}

std::string mdFence(std::string_view body) {
    std::string fence(std::max<size_t>(3, longestBacktickRun(body) + 1), '`');
    std::string out = fence + "\n" + std::string(body);
    if (!body.empty() && body.back() != '\n') out += '\n';
    return out + fence + "\n";
}

std::string sizeText(uint64_t b) {
    return bytesText(b, "");
}

std::string orDash(const std::optional<std::string>& s) {
    return s ? *s : "-";
}
std::string orDash(const std::optional<int64_t>& v) {
    return v ? std::to_string(*v) : "-";
}

std::string utcText(int64_t seconds) {
    time_t tt = static_cast<time_t>(seconds);
    struct tm tm {};
    gmtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string counted(int64_t n, std::string_view noun, std::string_view plural) {
    if (n == 1) return fmt::format("1 {}", noun);
    return plural.empty() ? fmt::format("{} {}s", n, noun) : fmt::format("{} {}", n, plural);
}

}  // namespace gpufault::cli
