// util-linux dmesg prefixes (sys-utils/dmesg.c print_record(), FORMATS.md §9.2).
#include "collectors/prefix/kernel_stamp.h"
#include "collectors/prefix/scan.h"
#include "collectors/prefix/timestamp.h"

namespace gpufault::prefix {

namespace {

constexpr std::string_view kFacilities[] = {
    "kern",   "user",   "mail",     "daemon", "auth",   "syslog", "lpr",    "news",
    "uucp",   "cron",   "authpriv", "ftp",    "res0",   "res1",   "res2",   "res3",
    "local0", "local1", "local2",   "local3", "local4", "local5", "local6", "local7"};
constexpr std::string_view kLevels[] = {
    "emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"};

template <size_t N>
bool oneOf(std::string_view w, const std::string_view (&list)[N]) {
    for (auto x : list)
        if (x == w) return true;
    return false;
}

std::string_view word(Cursor& c) {
    size_t start = c.i;
    while (isAlnum(c.peek()) && c.i - start < 10) ++c.i;
    return c.s.substr(start, c.i - start);
}

/// `-x`, `--decode`: `"%-6s:%-6s: "` (facility, level), e.g. `kern  :err   : `.
bool decodePrefix(Cursor& c, Origin& origin) {
    Cursor t = c;
    auto fac = word(t);
    t.spaces();
    if (!oneOf(fac, kFacilities) || !t.eat(':')) return false;
    auto lvl = word(t);
    t.spaces();
    if (!oneOf(lvl, kLevels) || !t.eat(':') || !(t.eat(' ') || t.done())) return false;
    origin = fac == "kern" ? Origin::Kernel : Origin::Other;
    c = t;
    return true;
}

/// `-r`, `--raw`: `<%d>` with LOG_RAW_FAC_PRI(facility, level).
bool rawPriority(Cursor& c, Origin& origin) {
    Cursor t = c;
    int64_t pri = 0;
    if (!t.eat('<') || !t.number(pri, 1, 3) || !t.eat('>') || pri > 191) return false;
    origin = (pri >> 3) == 0 ? Origin::Kernel : Origin::Other;
    c = t;
    return true;
}

/// `seconds.fraction` with 1–10 integer and min_frac–9 fraction digits; `sep` is the decimal mark.
std::optional<double> decimal(Cursor& c, char sep, size_t min_frac) {
    Cursor t = c;
    int64_t sec = 0, frac = 0;
    if (!t.number(sec, 1, 10) || !t.eat(sep)) return std::nullopt;
    size_t n = t.number(frac, min_frac, 9);
    if (n == 0) return std::nullopt;
    int64_t div = 1;
    for (size_t k = 0; k < n; ++k) div *= 10;
    c = t;
    // One division of the exact integer is the double nearest the printed decimal (a sum of
    // the two parts is not: 41 + 0.257555 = 41.257554999999996).
    if (sec < (int64_t{1} << 53) / div)
        return static_cast<double>(sec * div + frac) / static_cast<double>(div);
    return static_cast<double>(sec) + static_cast<double>(frac) / static_cast<double>(div);
}

/// ` <    0.000042>` (`-d` delta) or journalctl short-delta ` <    0.000035 >` / `*>`.
void deltaSuffix(Cursor& c) {
    Cursor t = c;
    t.spaces();
    if (!t.eat('<')) return;
    size_t close = t.s.find('>', t.i);
    if (close == std::string_view::npos || close - t.i > 24) return;
    c.i = close + 1;
}

/// The inside of `[...]` as a `-T` ctime stamp `Tue Sep  9 02:30:28 2025` (localized names
/// allowed: the layout is `... HH:MM:SS YYYY`). Sets `wall` when the month is recognised.
bool ctimeStamp(std::string_view in, KernelPrefix& p) {
    if (in.size() < 15) return false;
    Cursor y{in, in.size() - 4};
    CivilTime t;
    t.year = y.fixed(4);
    size_t ts = in.size() - 13;  // `HH:MM:SS YYYY`
    Cursor h{in, ts};
    if (t.year < 0 || in[in.size() - 5] != ' ' || (t.hour = h.fixed(2)) < 0 || !h.eat(':') ||
        (t.minute = h.fixed(2)) < 0 || !h.eat(':') || (t.second = h.fixed(2)) < 0)
        return false;
    if (ts == 0 || in[ts - 1] != ' ') return false;
    // Tokens before the time: weekday, month, day in the translated order.
    std::string_view tokens[8];
    size_t n = 0;
    for (size_t i = 0; i < ts && n < 8;) {
        while (i < ts && in[i] == ' ') ++i;
        size_t start = i;
        while (i < ts && in[i] != ' ') ++i;
        if (i > start) tokens[n++] = in.substr(start, i - start);
    }
    int day_at = -1;
    for (size_t k = 0; k < n; ++k) {
        Cursor d{tokens[k]};
        int64_t v = 0;
        if (d.number(v, 1, 2) && (d.done() || (d.eat('.') && d.done())) && v >= 1 && v <= 31) {
            t.day = static_cast<int>(v);
            day_at = static_cast<int>(k);
        }
    }
    if (day_at < 0 || n < 2) return false;
    if (day_at > 0) t.month = monthFromName(tokens[day_at - 1]);
    if (t.month == 0 && static_cast<size_t>(day_at) + 1 < n)
        t.month = monthFromName(tokens[day_at + 1]);
    p.wall = formatWall(t);
    if (!p.wall && t.month != 0) p.wall_refused = WallRefusal::Date;  // `Feb 30`, `25:00:00`
    return true;
}

/// `-H`/`-e` time break `Sep 9 02:30`, `Sep10 02:30`, `Dez26 08:58`, `12月25 19:09`: a month
/// (letters, or digits + a CJK month sign), the day, `HH:MM`. Sets `wall` to `MM-DDTHH:MM` (to
/// the minute, as printed: no year, no seconds) when the month is recognised.
bool timeBreak(std::string_view in, KernelPrefix& p) {
    if (in.size() < 8 || in.size() > 32) return false;
    Cursor h{in, in.size() - 5};
    CivilTime t;
    if ((t.hour = h.fixed(2)) < 0 || !h.eat(':') || (t.minute = h.fixed(2)) < 0 ||
        in[in.size() - 6] != ' ')
        return false;
    Cursor d{in.substr(0, in.size() - 6)};
    int64_t v = 0;
    size_t start = d.i;
    if (d.number(v, 1, 2)) {
        size_t digits = d.i;
        while (isHighByte(d.peek()) && !d.done()) ++d.i;
        if (d.i == digits) return false;
    } else {
        while ((isAlpha(d.peek()) || isHighByte(d.peek()) || d.peek() == '.') && !d.done()) ++d.i;
        if (d.i - start < 2) return false;
    }
    std::string_view month = d.s.substr(start, d.i - start);
    d.spaces();
    if (!d.number(v, 1, 2) || v < 1 || v > 31 || !d.done()) return false;
    t.month = monthFromName(month);
    t.day = static_cast<int>(v);
    if (auto wall = formatWall(t)) {
        p.wall = wall->substr(0, wall->size() - 3);  // no `:SS`
    } else if (t.month != 0) {
        p.wall_refused = WallRefusal::Date;  // `Feb30 01:03`, `Feb 30 01:03`
    }
    return true;
}

/// One `[...] ` stamp (raw, `-d`, delta-only, ctime, time break, signed delta).
bool bracketStamp(Cursor& c, KernelPrefix& p) {
    if (c.peek() != '[') return false;
    size_t close = c.s.find(']', c.i);
    if (close == std::string_view::npos || close - c.i > 64) return false;
    std::string_view in = c.s.substr(c.i + 1, close - c.i - 1);
    if (in.find('[') != std::string_view::npos) return false;
    if (close + 1 < c.s.size() && c.s[close + 1] != ' ') return false;
    Cursor t{in};
    t.spaces();
    bool ok = false;
    if (auto mono = decimal(t, '.', 3)) {  // `[%5ld.%06ld]`, `-d` `[%5ld.%06ld <%12.06f>]`
        deltaSuffix(t);
        if (t.done()) p.kernel_s = mono, ok = true;
    } else if (t.peek() == '<') {  // `--time-format delta` `[<%12.06f>]`
        deltaSuffix(t);
        ok = t.done();
    } else if (t.peek() == '+' || t.peek() == '-') {  // `[  %+8.06f]`, `,` in some locales
        ++t.i;
        Cursor u = t;
        ok = (decimal(t, '.', 6) && t.done()) || (decimal(u, ',', 6) && u.done());
    }
    if (!ok) {
        // `-T -d` appends ` <delta>` inside the brackets.
        size_t lt = in.rfind(" <");
        std::string_view core = in;
        if (lt != std::string_view::npos && in.back() == '>') core = in.substr(0, lt);
        ok = ctimeStamp(core, p) || timeBreak(in, p);
    }
    if (!ok) return false;
    c.i = close + 1;
    c.eat(' ');
    return true;
}

/// `--time-format iso`: `2025-09-09T02:30:28,123456+02:00 ` (comma before the microseconds).
bool isoStamp(Cursor& c, KernelPrefix& p) {
    auto st = scanIsoStamp(c.rest());
    if (!st || st->frac_sep != ',' || !st->zone) return false;
    Cursor t = c;
    t.i += st->len;
    if (!(t.eat(' ') || t.done())) return false;
    p.wall = stampWall(*st);
    p.wall_utc_s = zonedEpoch(*st);
    p.wall_refused = stampRefusal(*st);
    c = t;
    return true;
}

/// The caller id `[%*s] ` with `T<tid>` or `C<cpu>` (CONFIG_PRINTK_CALLER).
bool callerId(Cursor& c) {
    Cursor t = c;
    int64_t id = 0;
    if (!t.eat('[')) return false;
    t.spaces();
    if (!(t.eat('T') || t.eat('C')) || !t.number(id, 1, 10) || !t.eat(']')) return false;
    if (!(t.eat(' ') || t.done())) return false;
    c = t;
    return true;
}

}  // namespace

std::optional<double> parsePrintkStamp(std::string_view s, size_t* len, bool allow_delta) {
    Cursor c{s};
    if (!c.eat('[')) return std::nullopt;
    c.spaces();
    auto v = decimal(c, '.', 3);
    if (v && allow_delta) deltaSuffix(c);
    if (!v || !c.eat(']')) return std::nullopt;
    if (len) *len = c.i;
    return v;
}

bool parseDmesgPrefix(std::string_view line, KernelPrefix& out) {
    char first = line.empty() ? '\0' : line[0];
    if (first != '[' && first != '<' && !isDigit(first) && !isAlpha(first)) return false;
    Cursor c{line};
    KernelPrefix p;
    p.origin = Origin::Kernel;
    bool decoded = isAlpha(first) && decodePrefix(c, p.origin);
    if (isAlpha(first) && !decoded) return false;
    size_t before_pri = c.i;
    Origin pri_origin = p.origin;
    bool pri = rawPriority(c, pri_origin);
    bool stamp = bracketStamp(c, p) || (isDigit(c.peek()) && isoStamp(c, p));
    if (pri && stamp) p.origin = pri_origin;
    if (pri && !stamp) c.i = before_pri;
    bool caller = callerId(c);
    if (!decoded && !stamp && !caller) return false;
    p.consumed = c.i;
    out = std::move(p);
    return true;
}

}  // namespace gpufault::prefix
