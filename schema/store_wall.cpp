// Store: a record's wall time as an instant (evidence.wall_utc_us, wall_zone; docs/evidence.md
// "Wall time"). One parser for the stamp: collectors/prefix/timestamp.h.
#include <fmt/format.h>

#include <ctime>

#include "collectors/prefix/line_decoder.h"
#include "collectors/prefix/timestamp.h"
#include "schema/store.h"

namespace gpufault {

namespace {

/// The instants at which this process's local zone shows `t` (TZ, else /etc/localtime): one;
/// two in a DST overlap (the hour shown twice), earlier first; none in a gap (the hour skipped).
std::vector<int64_t> localReadings(const prefix::CivilTime& t) {
    std::vector<int64_t> out;
    for (int dst : {0, 1}) {
        struct tm tm {};
        tm.tm_year = t.year - 1900;
        tm.tm_mon = t.month - 1;
        tm.tm_mday = t.day;
        tm.tm_hour = t.hour;
        tm.tm_min = t.minute;
        tm.tm_sec = t.second;
        tm.tm_isdst = dst;
        time_t tt = std::mktime(&tm);
        struct tm back {};
        if (tt == static_cast<time_t>(-1) || !::localtime_r(&tt, &back)) continue;
        // mktime normalises what the zone does not show; only a reading shown as `t` counts
        if (back.tm_year != t.year - 1900 || back.tm_mon != t.month - 1 || back.tm_mday != t.day ||
            back.tm_hour != t.hour || back.tm_min != t.minute || back.tm_sec != t.second)
            continue;
        auto at = static_cast<int64_t>(tt);
        if (out.empty() || out.front() != at) out.push_back(at);
    }
    if (out.size() == 2 && out[1] < out[0]) std::swap(out[0], out[1]);
    return out;
}

}  // namespace

std::optional<WallInstant> Store::wallInstant(const TimeInfo& t, std::string& refused) {
    refused.clear();
    if (t.wall_utc_s) return WallInstant{*t.wall_utc_s * 1000000, "stated"};
    if (!t.wall || t.wall->size() != 19) return std::nullopt;  // no year: no instant
    if (*t.wall == lastWall_ && lastInstant_) return lastInstant_;
    auto st = prefix::scanIsoStamp(*t.wall);
    if (!st || st->len != 19 || prefix::formatWall(st->t) != *t.wall) {  // `02-30`, `24:00`
        refused = fmt::format("wall time {} is not a date and time: no instant stored", *t.wall);
        return std::nullopt;
    }
    auto readings = localReadings(st->t);
    WallInstant w;
    if (readings.size() == 1) {
        w = WallInstant{readings[0] * 1000000, "local"};
    } else if (readings.size() == 2) {  // shown twice (DST ended): the earlier, marked
        w = WallInstant{readings[0] * 1000000, "local_ambiguous"};
    } else {  // skipped (DST began): as read with the offset before the change, marked
        struct tm tm {};
        tm.tm_year = st->t.year - 1900;
        tm.tm_mon = st->t.month - 1;
        tm.tm_mday = st->t.day;
        tm.tm_hour = st->t.hour;
        tm.tm_min = st->t.minute;
        tm.tm_sec = st->t.second;
        tm.tm_isdst = 0;
        time_t tt = std::mktime(&tm);
        if (tt == static_cast<time_t>(-1)) return std::nullopt;
        w = WallInstant{static_cast<int64_t>(tt) * 1000000, "local_ambiguous"};
    }
    lastWall_ = *t.wall;
    lastInstant_ = w;
    return w;
}

db::Result<int64_t> Store::restateWallZones() {
    // Only rows read as local: the zone a raw line states is found by the line decoder (one
    // parser for every stamp form), and must give the stored date to be taken.
    auto sel = db_.prepare(
        "SELECT id, raw, wall FROM evidence WHERE wall_zone = 'local' AND raw IS NOT NULL");
    auto upd =
        db_.prepare("UPDATE evidence SET wall_utc_us = ?2, wall_zone = 'stated' WHERE id = ?1");
    if (!sel) return std::unexpected(sel.error());
    if (!upd) return std::unexpected(upd.error());
    std::vector<std::pair<int64_t, int64_t>> fixes;  // id, instant (s)
    for (;;) {
        auto row = sel->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        std::string raw = sel->str(1), wall = sel->str(2);
        std::string_view first(raw);
        first = first.substr(0, first.find('\n'));
        std::optional<int64_t> stated;
        LineDecoder decoder;
        decoder.feed(1, first, [&](const LogLine& l) {
            if (!stated && l.time.wall_utc_s && l.time.wall == wall) stated = l.time.wall_utc_s;
        });
        if (stated) fixes.emplace_back(sel->i64(0), *stated);
    }
    for (const auto& [id, secs] : fixes) {
        upd->bind(1, id).bind(2, secs * 1000000);
        if (auto r = upd->run(); !r) return std::unexpected(r.error());
    }
    return static_cast<int64_t>(fixes.size());
}

}  // namespace gpufault
