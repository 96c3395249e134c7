// Line endings, reply quotes, logger stamps and `[rankN]:` (see program_prefix.h).
#include "collectors/prefix/program_prefix.h"

#include <cstring>

#include "collectors/prefix/scan.h"
#include "collectors/prefix/timestamp.h"

namespace gpufault::prefix {

namespace {

/// `YYYY-MM-DDTHH:MM:SS.ffffff - ` (no zone) at the start of `s`: its length, or 0.
size_t loggerStampAt(std::string_view s) {
    if (s.size() < 22 || !isDigit(s[0])) return 0;
    auto st = scanIsoStamp(s);
    if (!st || st->zone || st->frac_digits == 0) return 0;
    if (s.substr(st->len, 3) != " - ") return 0;
    return st->len + 3;
}

}  // namespace

std::string_view trimLineEnd(std::string_view s) {
    for (;;) {
        size_t n = s.size();
        while (n > 0 &&
               (s[n - 1] == '\r' || s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
            --n;
        s = s.substr(0, n);
        if (!s.ends_with("^M")) return s;
        s.remove_suffix(2);
    }
}

std::string_view afterCarriageReturn(std::string_view s) {
    if (s.empty()) return s;
    const void* hit = memrchr(s.data(), '\r', s.size());
    if (!hit) return s;
    size_t pos = static_cast<size_t>(static_cast<const char*>(hit) - s.data());
    return s.substr(pos + 1);
}

std::string_view stripReplyQuotes(std::string_view s) {
    // a Markdown code fence or inline-code mark glued to the pasted line (```[Wed Jul 30
    // 20:12:38 2025] amdgpu …, `[356702.608922] NVRM: …), or a terminal's `^[` (an escape
    // copied as text) before blanks and a stamp
    if (s.size() > 1 && s[0] == '`') {
        size_t n = s.find_first_not_of('`');
        if (n != std::string_view::npos && n <= 3 && (s[n] == '[' || (n == 3 && s[n] == ' ')))
            s.remove_prefix(s[n] == ' ' ? n + 1 : n);
    } else if (s.size() > 2 && s[0] == '^' && s[1] == '[') {
        size_t n = s.find_first_not_of(' ', 2);
        if (n != std::string_view::npos && n > 2 && s[n] == '[') s.remove_prefix(n);
    }
    while (!s.empty() && s[0] == '>') {
        size_t n = s.find_first_not_of('>');
        if (n == std::string_view::npos) return {};
        if (n > 2) break;  // `>>> ` is Python's prompt, not a quote
        if (s[n] == ' ' || s[n] == '\t') {
            s.remove_prefix(n + 1);
        } else if (s[n] == '[') {  // `>[  327.803487] …`: a quoted kernel line, no blank
            s.remove_prefix(n);
        } else {
            break;
        }
    }
    return s;
}

size_t loggerStampsLength(std::string_view s) {
    size_t total = 0;
    while (size_t n = loggerStampAt(s.substr(total))) total += n;
    return total;
}

bool removeGluedLoggerStamps(std::string_view s, std::string& out) {
    // Candidates: a digit run starting `20` followed by the `YYYY-MM-DDT` shape.
    size_t pos = 0, copied = 0;
    bool any = false;
    while ((pos = s.find("20", pos)) != std::string_view::npos) {
        size_t n = loggerStampAt(s.substr(pos));
        if (n == 0) {
            ++pos;
            continue;
        }
        if (!any) out.clear();
        any = true;
        out.append(s.substr(copied, pos - copied));
        pos += n;
        copied = pos;
    }
    if (any) out.append(s.substr(copied));
    return any;
}

size_t containerStampLength(std::string_view s,
                            std::optional<std::string>& wall,
                            std::optional<int64_t>& utc_s) {
    if (s.size() < 21 || !isDigit(s[0])) return 0;
    auto st = scanIsoStamp(s);
    if (!st || st->sep != 'T' || !st->zone || s.size() <= st->len || s[st->len] != ' ') return 0;
    wall = stampWall(*st);
    utc_s = zonedEpoch(*st);
    return st->len + 1;
}

std::optional<int64_t> parseRankPrefix(std::string_view s, size_t* len) {
    if (s.empty() || s[0] != '[') return std::nullopt;
    if (s.size() > 1 && isDigit(s[1])) {  // Open MPI --tag-output: `[JOBID,RANK]<stdout>:`
        Cursor c{s};
        c.i = 1;
        int64_t job = 0, rank = 0;
        if (!c.number(job, 1, 10) || !c.eat(",") || !c.number(rank, 1, 7) || !c.eat("]<"))
            return std::nullopt;
        size_t close = s.find(">:", c.i);
        if (close == std::string_view::npos || close - c.i > 8) return std::nullopt;
        std::string_view stream = s.substr(c.i, close - c.i);
        if (stream != "stdout" && stream != "stderr" && stream != "stddiag") return std::nullopt;
        c.i = close + 2;
        c.eat(' ');
        if (len) *len = c.i;
        return rank;
    }
    size_t i = 1;
    auto roleChar = [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == '-';
    };
    while (i < s.size() && i <= 32 && roleChar(s[i])) ++i;
    if (i == 1 || i > 32) return std::nullopt;
    Cursor c{s};
    c.i = i;
    int64_t rank = 0;
    if (!c.number(rank, 1, 7) || !c.eat("]:")) return std::nullopt;
    c.eat(' ');
    if (len) *len = c.i;
    return rank;
}

std::optional<WorkerPrefix> parseWorkerPrefix(std::string_view s) {
    auto sgr = [&](size_t at) -> size_t {  // an `ESC[…m` colour code at `at`: its length
        if (s.substr(at, 2) != "\x1b[") return 0;
        size_t j = at + 2;
        while (j < s.size() && j < at + 12 && (isDigit(s[j]) || s[j] == ';')) ++j;
        return j < s.size() && s[j] == 'm' ? j + 1 - at : 0;
    };
    size_t i = sgr(0);
    if (i >= s.size() || s[i] != '(') return std::nullopt;
    size_t close = s.find(')', i);
    if (close == std::string_view::npos || close - i > 96) return std::nullopt;
    std::string_view inner = s.substr(i + 1, close - i - 1);
    size_t at = inner.rfind(" pid=");
    if (at == std::string_view::npos || at == 0) return std::nullopt;
    WorkerPrefix w;
    w.label = inner;
    Cursor c{inner};
    c.i = at + 5;
    if (!c.number(w.pid, 1, 10) || c.i != inner.size()) return std::nullopt;
    std::string_view name = inner.substr(0, at);
    if (name.find('(') != std::string_view::npos) return std::nullopt;
    if (size_t r = name.find(" rank="); r != std::string_view::npos) {
        Cursor rc{name};
        rc.i = r + 6;
        int64_t rank = 0;
        if (rc.number(rank, 1, 7) && rc.i == name.size()) w.rank = rank;
    }
    i = close + 1;
    i += sgr(i);
    if (i >= s.size() || s[i] != ' ') return std::nullopt;
    w.len = i + 1;
    return w;
}

int64_t serviceRank(std::string_view name) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
    return kServiceRankBase + static_cast<int64_t>(h & ((uint64_t{1} << 40) - 1));
}

}  // namespace gpufault::prefix
