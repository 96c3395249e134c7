// Calendar stamps shared by the prefix parsers: ISO 8601/RFC 3339 scanning, localized month names,
// the `wall` string of TimeInfo.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/evidence.h"

namespace gpufault::prefix {

/// A calendar time as printed. `year` 0 = not printed, `month` 0 = not recognised.
struct CivilTime {
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
};

/// Days of `month` (1–12) in `year` (0: not printed, February then has 29); 0 for no month.
int daysInMonth(int year, int month);

/// TimeInfo::wall for `t`: `YYYY-MM-DDTHH:MM:SS`, or `MM-DDTHH:MM:SS` when no year was printed
/// (journald `short`, RFC 3164 syslog). nullopt when the month is unknown or a field is invalid
/// (a day the month does not have: `02-30`, `2026-02-29`).
std::optional<std::string> formatWall(const CivilTime& t);

/// Month 1–12 of an abbreviated or full month name as strftime `%b` prints it in English and
/// common glibc locales (de, fr, es, it, pt, nl, sv/da/no, pl, cs, hu, ro, tr, fi, ru; any
/// case; a trailing `.` is ignored), or `9月`/`9월` (CJK). 0 when not recognised.
int monthFromName(std::string_view token);

/// An ISO 8601 / RFC 3339 stamp at the start of a line: `YYYY-MM-DD[T ]HH:MM:SS[.,]f…` with an
/// optional zone `Z` / `±HH:MM` / `±HHMM` / `±HH` (Go RFC3339Nano, rsyslog date-rfc3339,
/// journald short-iso, util-linux `--time-format iso`). A stamp of this shape whose date or time
/// does not exist (`2026-13-01`, `02-30`, `25:00`) is a stamp with `bad_date` set (its time is
/// refused, not read as another); `24:00:00` is the next day's `00:00:00`.
struct IsoStamp {
    CivilTime t;
    size_t len = 0;       ///< bytes of the stamp
    char sep = 'T';       ///< the date/time separator: 'T' or ' '
    int frac_digits = 0;  ///< digits after the seconds (0: none)
    char frac_sep = 0;    ///< '.' or ',' (0: no fraction)
    bool zone = false;    ///< a zone follows
    bool zone_z = false;  ///< the zone is `Z`
    int offset_s = 0;     ///< the zone's offset east of UTC, seconds (0 without a zone)
    /// the zone's offset is out of range (`+2500`, `+01:75`): the stamp's time is refused
    /// (stampWall() and zonedEpoch() give none), not read in another zone
    bool bad_zone = false;
    /// a field is out of range (month 13, `02-30`, hour 25, minute 60, `24:00:01`): the stamp's
    /// time is refused (stampWall() and zonedEpoch() give none)
    bool bad_date = false;
};

/// Scans an ISO stamp at the start of `s` (`allow_space`: also `YYYY-MM-DD HH:MM:SS`).
std::optional<IsoStamp> scanIsoStamp(std::string_view s, bool allow_space = false);

/// TimeInfo::wall of a scanned stamp: formatWall(st.t), nullopt when its date or zone is refused.
std::optional<std::string> stampWall(const IsoStamp& st);

/// Why stampWall(st) gives no wall: Date (bad_date), Zone (bad_zone), else None.
inline WallRefusal stampRefusal(const IsoStamp& st) {
    return st.bad_date ? WallRefusal::Date : st.bad_zone ? WallRefusal::Zone : WallRefusal::None;
}

/// The UTC calendar time of `secs` seconds since the Unix epoch (journald `short-unix`).
CivilTime civilFromEpoch(int64_t secs);

/// Seconds since the Unix epoch of `t` read as UTC (the inverse of civilFromEpoch()); nullopt
/// without a year or with an invalid field.
std::optional<int64_t> epochFromCivil(const CivilTime& t);

/// The instant of an ISO stamp that states its zone (`t` minus the offset), seconds since the
/// epoch; nullopt when it states none or a refused one (bad_zone), or its date is refused.
std::optional<int64_t> zonedEpoch(const IsoStamp& st);

}  // namespace gpufault::prefix
