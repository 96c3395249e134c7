// Store: a record's wall time as an instant (evidence.wall_utc_us, wall_zone; docs/evidence.md
// "Wall time"). One parser for the stamp: collectors/prefix/timestamp.h.
#include <fmt/format.h>

#include <ctime>
#include <optional>
#include <string>
#include <vector>

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
    // Every row with a wall time, as a fresh ingest reads it: a line of a log file is decoded
    // again (one parser for every stamp form) and its time goes through wallInstant(); a time
    // a producer stated (a core's, a journal field's) stays. Batches of kBatch rows, each its
    // own transaction; upgrade_steps.next_id is where an interrupted upgrade goes on.
    constexpr int64_t kBatch = 2000;
    auto has = db_.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
    if (!has) return std::unexpected(has.error());
    has->bind(1, "upgrade_steps");
    auto hasRow = has->step();
    has->reset();  // no read transaction left open: BEGIN IMMEDIATE below must not be refused
    if (!hasRow) return std::unexpected(hasRow.error());
    if (!*hasRow) return 0;  // a store made before the table: nothing queued
    auto next = db_.prepare("SELECT next_id FROM upgrade_steps WHERE name = 'restate-wall-zones'");
    if (!next) return std::unexpected(next.error());
    auto row = next->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return 0;
    int64_t after = next->i64(0);
    next->reset();
    auto sel = db_.prepare(
        "SELECT e.id, e.source_id, e.line, e.raw, e.wall, e.wall_zone, e.wall_utc_us, s.kind "
        "FROM evidence e JOIN sources s ON s.id = e.source_id "
        "WHERE e.id > ?1 AND (e.wall IS NOT NULL OR e.wall_zone IS NOT NULL OR (s.kind = "
        "'file' AND e.raw IS NOT NULL)) "
        "ORDER BY e.id LIMIT ?2");
    auto upd = db_.prepare(
        "UPDATE evidence SET wall = ?2, wall_utc_us = ?3, wall_zone = ?4 WHERE id = ?1");
    auto mark =
        db_.prepare("UPDATE upgrade_steps SET next_id = ?1 WHERE name = 'restate-wall-zones'");
    auto done = db_.prepare("DELETE FROM upgrade_steps WHERE name = 'restate-wall-zones'");
    if (!sel) return std::unexpected(sel.error());
    if (!upd) return std::unexpected(upd.error());
    if (!mark) return std::unexpected(mark.error());
    if (!done) return std::unexpected(done.error());
    if (auto r = prepareWriters(); !r) return std::unexpected(r.error());  // addWarning()
    lastWall_.clear();
    lastInstant_.reset();
    struct Fix {
        int64_t id, source_id, line;
        std::optional<std::string> wall;
        std::optional<WallInstant> instant;
        std::string refused;
        bool changed;
    };
    int64_t changed = 0;
    for (bool more = true; more;) {
        sel->bind(1, after).bind(2, kBatch);
        std::vector<Fix> fixes;
        int64_t n = 0;
        for (;; ++n) {
            auto r = sel->step();
            if (!r) return std::unexpected(r.error());
            if (!*r) break;
            after = sel->i64(0);
            std::optional<std::string> wall, zone;
            if (!sel->isNull(4)) wall = sel->str(4);
            if (!sel->isNull(5)) zone = sel->str(5);
            std::optional<int64_t> utc_us;
            if (!sel->isNull(6)) utc_us = sel->i64(6);
            TimeInfo t;
            bool decoded = false;
            if (sel->str(7) == "file" && !sel->isNull(3)) {
                std::string raw = sel->str(3);
                std::string_view first(raw);
                first = first.substr(0, first.find('\n'));
                LineDecoder decoder;
                // The line as a fresh ingest reads it; no wall where 016 took one: the stamp
                // is refused now (`+0060`, `+1500`), no instant.
                auto take = [&](const LogLine& l) {
                    if (!decoded) t = l.time, decoded = true;
                };
                decoder.feed(1, first, take);
                decoder.finish(take);
            }
            // No wall decoded: the time came from elsewhere (a journal field), or the line's
            // stamp is refused now (`02-30`, `+0060`: the raw line starts with the date).
            bool refusedStamp = decoded && !t.wall && wall &&
                                sel->str(3).starts_with(*wall);
            if (decoded && !t.wall) decoded = false;
            if (!decoded && !refusedStamp) {  // a stated instant stays, a local one is read again
                if (zone == "stated") continue;
                t.wall = wall;
            }
            Fix f{sel->i64(0), sel->i64(1), sel->i64(2), t.wall, std::nullopt, {}, false};
            if (refusedStamp)
                f.refused =
                    zone == "stated"
                        ? fmt::format("wall time {} is not a date and time with a zone offset "
                                      "of -12:00 to +14:00: no instant stored",
                                      *wall)
                        : fmt::format("wall time {} is not a date and time: no instant stored",
                                      *wall);
            else
                f.instant = wallInstant(t, f.refused);
            std::optional<int64_t> new_us;
            std::optional<std::string> new_zone;
            if (f.instant) new_us = f.instant->utc_us, new_zone = f.instant->zone;
            f.changed = new_us != utc_us || new_zone != zone || t.wall != wall;
            if (f.changed) fixes.push_back(std::move(f));
        }
        sel->reset();
        more = n == kBatch;
        if (auto r = db_.exec("BEGIN IMMEDIATE"); !r) return std::unexpected(r.error());
        db::Result<void> r{};
        for (const auto& f : fixes) {
            upd->bind(1, f.id).bind(2, f.wall);
            if (f.instant)
                upd->bind(3, f.instant->utc_us).bind(4, std::string_view(f.instant->zone));
            else
                upd->bind(3, nullptr).bind(4, nullptr);
            if (r = upd->run(); !r) break;
            if (!f.refused.empty() &&
                !(r = addWarning(f.source_id, Warning{static_cast<uint64_t>(f.line), f.refused})))
                break;
        }
        if (r) r = more ? mark->bind(1, after).run() : done->run();
        if (r) r = db_.exec("COMMIT");
        if (!r) {
            (void)db_.exec("ROLLBACK");
            return std::unexpected(r.error());
        }
        changed += static_cast<int64_t>(fixes.size());
    }
    return changed;
}

}  // namespace gpufault
