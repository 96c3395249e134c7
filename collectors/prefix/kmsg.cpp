// /dev/kmsg records (FORMATS.md §1.9): `PRI,SEQ,TS_USEC,FLAGS[,…];TEXT` + ` KEY=VALUE` lines.
#include "collectors/common/text.h"
#include "collectors/prefix/kernel_stamp.h"
#include "collectors/prefix/scan.h"

namespace gpufault::prefix {

using text::hexDigit;

std::optional<KernelPrefix> parseKmsgHeader(std::string_view line) {
    if (line.empty() || !isDigit(line[0])) return std::nullopt;
    Cursor c{line};
    int64_t pri = 0, seq = 0, usec = 0;
    if (!c.number(pri, 1, 4) || !c.eat(',') || !c.number(seq, 1, 19) || !c.eat(',') ||
        !c.number(usec, 1, 18) || !c.eat(','))
        return std::nullopt;
    // FLAGS (`-`, `c`, …) and any future `,key=value` fields up to the first `;`.
    size_t semi = line.find(';', c.i);
    if (semi == std::string_view::npos || semi == c.i || semi - c.i > 96) return std::nullopt;
    for (size_t k = c.i; k < semi; ++k)
        if (line[k] == ' ' || line[k] == '\t') return std::nullopt;
    KernelPrefix p;
    p.consumed = semi + 1;
    p.kernel_s = static_cast<double>(usec) / 1e6;
    p.origin = (pri >> 3) == 0 ? Origin::Kernel : Origin::Other;
    return p;
}

bool isKmsgContinuation(std::string_view line) {
    if (line.size() < 3 || line[0] != ' ') return false;
    size_t i = 1;
    while (i < line.size() &&
           ((line[i] >= 'A' && line[i] <= 'Z') || isDigit(line[i]) || line[i] == '_'))
        ++i;
    return i > 1 && i < line.size() && line[i] == '=';
}

bool unescapeKmsg(std::string_view text, std::string& out) {
    size_t pos = text.find("\\x");
    if (pos == std::string_view::npos) return false;
    out.clear();
    out.reserve(text.size());
    out.append(text.substr(0, pos));
    for (size_t i = pos; i < text.size(); ++i) {
        int hi = 0, lo = 0;
        if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] == 'x' &&
            (hi = hexDigit(text[i + 2])) >= 0 && (lo = hexDigit(text[i + 3])) >= 0) {
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 3;
        } else {
            out.push_back(text[i]);
        }
    }
    return true;
}

}  // namespace gpufault::prefix
