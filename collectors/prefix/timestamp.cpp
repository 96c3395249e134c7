// Calendar stamps: ISO scanning, month names, wall formatting (see timestamp.h).
#include "collectors/prefix/timestamp.h"

#include <algorithm>

#include "collectors/prefix/scan.h"

namespace gpufault::prefix {

namespace {

struct MonthName {
    std::string_view prefix;  // lower case, UTF-8
    int month;
};

// strftime `%b` abbreviations (and a few full names) of glibc locales. The longest entry that
// starts the token wins, so Finnish `marras` (November) beats `mar` (March).
// clang-format off
constexpr MonthName kMonths[] = {
    {"jan", 1},  {"feb", 2},  {"mar", 3},  {"apr", 4},  {"may", 5},  {"jun", 6},
    {"jul", 7},  {"aug", 8},  {"sep", 9},  {"oct", 10}, {"nov", 11}, {"dec", 12},
    // de, nl, sv, da, no, id
    {"j\xc3\xa4n", 1}, {"m\xc3\xa4r", 3}, {"mrz", 3}, {"mai", 5}, {"okt", 10}, {"dez", 12},
    {"mrt", 3},  {"mei", 5},  {"maj", 5},  {"des", 12}, {"agu", 8},
    // fr
    {"janv", 1}, {"f\xc3\xa9v", 2}, {"fev", 2}, {"avr", 4}, {"juin", 6}, {"juil", 7},
    {"ao\xc3\xbb", 8}, {"aou", 8}, {"d\xc3\xa9" "c", 12},
    // es, it, pt, ro
    {"ene", 1},  {"abr", 4},  {"ago", 8},  {"dic", 12}, {"gen", 1},  {"mag", 5},
    {"giu", 6},  {"lug", 7},  {"set", 9},  {"ott", 10}, {"out", 10}, {"ian", 1},
    {"iun", 6},  {"iul", 7},
    // pl, cs
    {"sty", 1},  {"lut", 2},  {"kwi", 4},  {"cze", 6},  {"lip", 7},  {"sie", 8},
    {"wrz", 9},  {"pa\xc5\xba", 10}, {"lis", 11}, {"gru", 12}, {"led", 1}, {"dub", 4},
    {"srp", 8},  {"pro", 12},
    // hu
    {"m\xc3\xa1r", 3}, {"\xc3\xa1pr", 4}, {"m\xc3\xa1j", 5}, {"j\xc3\xban", 6},
    {"j\xc3\xbal", 7}, {"szep", 9},
    // tr
    {"oca", 1},  {"\xc5\x9fub", 2}, {"nis", 4}, {"haz", 6}, {"tem", 7}, {"a\xc4\x9fu", 8},
    {"eyl", 9},  {"eki", 10}, {"kas", 11}, {"ara", 12},
    // fi (full month stems)
    {"tammi", 1}, {"helmi", 2}, {"maalis", 3}, {"huhti", 4}, {"touko", 5}, {"marras", 11},
    // ru (Cyrillic, lower case): янв фев мар апр май мая июн июл авг сен окт ноя дек
    {"\xd1\x8f\xd0\xbd\xd0\xb2", 1}, {"\xd1\x84\xd0\xb5\xd0\xb2", 2},
    {"\xd0\xbc\xd0\xb0\xd1\x80", 3}, {"\xd0\xb0\xd0\xbf\xd1\x80", 4},
    {"\xd0\xbc\xd0\xb0\xd0\xb9", 5}, {"\xd0\xbc\xd0\xb0\xd1\x8f", 5},
    {"\xd0\xb8\xd1\x8e\xd0\xbd", 6}, {"\xd0\xb8\xd1\x8e\xd0\xbb", 7},
    {"\xd0\xb0\xd0\xb2\xd0\xb3", 8}, {"\xd1\x81\xd0\xb5\xd0\xbd", 9},
    {"\xd0\xbe\xd0\xba\xd1\x82", 10}, {"\xd0\xbd\xd0\xbe\xd1\x8f", 11},
    {"\xd0\xb4\xd0\xb5\xd0\xba", 12},
};
// clang-format on

/// ASCII, Latin-1 supplement (U+00C0–U+00DE) and basic Cyrillic upper case to lower case, into
/// `buf` (which holds at least s.size() bytes).
std::string_view lowerUtf8(std::string_view s, char* buf) {
    std::copy(s.begin(), s.end(), buf);
    char* out = buf;
    for (size_t i = 0; i < s.size(); ++i) {
        auto c = static_cast<unsigned char>(out[i]);
        if (c >= 'A' && c <= 'Z') {
            out[i] = static_cast<char>(c + 32);
        } else if (i + 1 < s.size()) {
            auto d = static_cast<unsigned char>(out[i + 1]);
            if (c == 0xc3 && d >= 0x80 && d <= 0x9e && d != 0x97) {
                out[i + 1] = static_cast<char>(d + 0x20);
            } else if (c == 0xd0 && d >= 0x90 && d <= 0x9f) {  // А–П → а–п
                out[i + 1] = static_cast<char>(d + 0x20);
            } else if (c == 0xd0 && d >= 0xa0 && d <= 0xaf) {  // Р–Я → р–я
                out[i] = static_cast<char>(0xd1);
                out[i + 1] = static_cast<char>(d - 0x20);
            }
            if (c >= 0xc0) ++i;
        }
    }
    return {buf, s.size()};
}

}  // namespace

int daysInMonth(int year, int month) {
    static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month < 1 || month > 12) return 0;
    if (month != 2 || year <= 0) return kDays[month - 1];
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return leap ? 29 : 28;
}

std::optional<std::string> formatWall(const CivilTime& t) {
    if (t.month < 1 || t.month > 12 || t.day < 1 || t.day > daysInMonth(t.year, t.month) ||
        t.hour < 0 || t.hour > 23 || t.minute < 0 || t.minute > 59 || t.second < 0 ||
        t.second > 60 || t.year > 9999)
        return std::nullopt;
    char buf[20];
    size_t n = 0;
    auto two = [&](int v) {
        buf[n++] = static_cast<char>('0' + v / 10);
        buf[n++] = static_cast<char>('0' + v % 10);
    };
    if (t.year > 0) {
        two(t.year / 100);
        two(t.year % 100);
        buf[n++] = '-';
    }
    two(t.month);
    buf[n++] = '-';
    two(t.day);
    buf[n++] = 'T';
    two(t.hour);
    buf[n++] = ':';
    two(t.minute);
    buf[n++] = ':';
    two(t.second);
    return std::string(buf, n);
}

int monthFromName(std::string_view token) {
    while (!token.empty() && token.back() == '.') token.remove_suffix(1);
    if (token.size() < 2 || token.size() > 24) return 0;
    // CJK: `9月` (zh, ja), `9월` (ko).
    for (std::string_view suffix :
         {std::string_view("\xe6\x9c\x88"), std::string_view("\xec\x9b\x94")}) {
        if (token.size() > suffix.size() && token.ends_with(suffix)) {
            Cursor c{token.substr(0, token.size() - suffix.size())};
            c.spaces();
            int64_t m = 0;
            if (c.number(m, 1, 2) && c.done() && m >= 1 && m <= 12) return static_cast<int>(m);
            return 0;
        }
    }
    if (isDigit(token[0])) return 0;
    char buf[24];
    std::string_view low = lowerUtf8(token, buf);
    if (low.size() == 3)  // the common case, English `%b`
        for (size_t k = 0; k < 12; ++k)
            if (low == kMonths[k].prefix) return kMonths[k].month;
    int best = 0;
    size_t best_len = 0;
    auto consider = [&](const MonthName& m) {
        if (m.prefix.size() > best_len && low.starts_with(m.prefix)) {
            best = m.month;
            best_len = m.prefix.size();
        }
    };
    for (const auto& m : kMonths) consider(m);
    return best;
}

std::optional<IsoStamp> scanIsoStamp(std::string_view s, bool allow_space) {
    if (s.size() < 19 || !isDigit(s[0])) return std::nullopt;
    Cursor c{s};
    IsoStamp st;
    // The shape decides whether this is a stamp; a field out of range only refuses its time.
    st.t.year = c.fixed(4);
    if (st.t.year < 0 || !c.eat('-')) return std::nullopt;
    st.t.month = c.fixed(2);
    if (st.t.month < 0 || !c.eat('-')) return std::nullopt;
    st.t.day = c.fixed(2);
    if (st.t.day < 0) return std::nullopt;
    st.sep = c.peek();
    if (!(c.eat('T') || (allow_space && c.eat(' ')))) return std::nullopt;
    st.t.hour = c.fixed(2);
    if (st.t.hour < 0 || !c.eat(':')) return std::nullopt;
    st.t.minute = c.fixed(2);
    if (st.t.minute < 0 || !c.eat(':')) return std::nullopt;
    st.t.second = c.fixed(2);
    if (st.t.second < 0) return std::nullopt;
    st.bad_date = st.t.month < 1 || st.t.month > 12 || st.t.day < 1 ||
                  st.t.day > daysInMonth(st.t.year, st.t.month) || st.t.hour > 24 ||
                  st.t.minute > 59 || st.t.second > 60;
    bool zeros = true;
    if ((c.peek() == '.' || c.peek() == ',') && isDigit(c.peek(1))) {
        st.frac_sep = c.peek();
        ++c.i;
        while (isDigit(c.peek()) && !c.done())
            zeros = zeros && c.peek() == '0', ++c.i, ++st.frac_digits;
        if (st.frac_digits > 9) return std::nullopt;
    }
    if (st.t.hour == 24 && !st.bad_date) {  // ISO 8601 `24:00:00`: the next day's 00:00:00
        auto day = epochFromCivil(CivilTime{st.t.year, st.t.month, st.t.day, 0, 0, 0});
        if (st.t.minute != 0 || st.t.second != 0 || !zeros || !day)
            st.bad_date = true;
        else
            st.t = civilFromEpoch(*day + 86400);
    }
    if (c.peek() == 'Z' || c.peek() == 'z') {
        ++c.i;
        st.zone = st.zone_z = true;
    } else if ((c.peek() == '+' || c.peek() == '-') && isDigit(c.peek(1)) && isDigit(c.peek(2))) {
        // `±HH:MM`, `±HHMM` or `±HH`; an offset no zone uses (beyond −12:00…+14:00: `+1500`,
        // `+0060`) is refused (bad_zone)
        size_t save = c.i;
        int sign = c.peek() == '+' ? 1 : -1;
        int hours = (c.peek(1) - '0') * 10 + (c.peek(2) - '0');
        c.i += 3;
        int minutes = 0;
        bool ok = true;
        if (c.peek() == ':')
            ok = isDigit(c.peek(1)) && isDigit(c.peek(2)) && c.eat(':') &&
                 (minutes = c.fixed(2)) >= 0;
        else if (isDigit(c.peek()))
            ok = (minutes = c.fixed(2)) >= 0 && !isDigit(c.peek());
        if (!ok) {
            c.i = save;
        } else {
            st.zone = true;
            st.bad_zone = minutes > 59 || hours * 60 + minutes > (sign > 0 ? 14 : 12) * 60;
            if (!st.bad_zone) st.offset_s = sign * (hours * 3600 + minutes * 60);
        }
    }
    st.len = c.i;
    return st;
}

CivilTime civilFromEpoch(int64_t secs) {
    // H. Hinnant, "chrono-Compatible Low-Level Date Algorithms", civil_from_days.
    int64_t days = secs / 86400, rem = secs % 86400;
    if (rem < 0) rem += 86400, --days;
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    CivilTime t;
    t.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
    t.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
    t.year = static_cast<int>(yoe + era * 400 + (t.month <= 2 ? 1 : 0));
    t.hour = static_cast<int>(rem / 3600);
    t.minute = static_cast<int>(rem % 3600 / 60);
    t.second = static_cast<int>(rem % 60);
    return t;
}

std::optional<int64_t> epochFromCivil(const CivilTime& t) {
    if (t.year <= 0 || !formatWall(t)) return std::nullopt;
    // H. Hinnant, days_from_civil.
    int64_t y = t.year - (t.month <= 2 ? 1 : 0);
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t mp = t.month > 2 ? t.month - 3 : t.month + 9;
    int64_t doy = (153 * mp + 2) / 5 + t.day - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    return days * 86400 + t.hour * 3600 + t.minute * 60 + t.second;
}

std::optional<std::string> stampWall(const IsoStamp& st) {
    if (st.bad_zone || st.bad_date) return std::nullopt;
    return formatWall(st.t);
}

std::optional<int64_t> zonedEpoch(const IsoStamp& st) {
    if (!st.zone || st.bad_zone || st.bad_date) return std::nullopt;
    auto s = epochFromCivil(st.t);
    if (!s) return std::nullopt;
    return *s - st.offset_s;
}

}  // namespace gpufault::prefix
