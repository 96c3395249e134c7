// The journal source's cores: systemd-coredump's COREDUMP= field copied out of the journal, and
// the worker's job that reads, unwinds and stores a core the loop queued (pending_cores).
#include <fmt/format.h>
#include <systemd/sd-journal.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "collectors/coredump/systemd_coredump.h"
#include "daemon/daemon.h"
#include "daemon/sources/journal.h"
#include "daemon/test_pause.h"

namespace gpufault::daemon {

JournalCore journalCoreHere(sd_journal* j, const UnpackLimits& limits) {
    JournalCore jc;
    size_t saved = 0;
    (void)sd_journal_get_data_threshold(j, &saved);
    (void)sd_journal_set_data_threshold(j, 0);  // 0: whole fields, not their first 64 KiB
    const void* data = nullptr;
    size_t len = 0;
    int rc = sd_journal_get_data(j, "COREDUMP", &data, &len);
    constexpr std::string_view kField = "COREDUMP=";
    if (rc < 0) {
        jc.error = fmt::format("sd_journal_get_data: {}", std::strerror(-rc));
    } else if (len < kField.size()) {
        jc.error = "empty COREDUMP= field";
    } else if (len - kField.size() > limits.max_bytes) {
        jc.error = fmt::format("{} bytes: over cores.max_unpacked_mib ({} bytes)",
                               len - kField.size(),
                               limits.max_bytes);
    } else if (auto t = TempFile::create(limits, "journal"); !t) {
        jc.error = t.error().message;
    } else if (auto w = t->write(std::string_view(static_cast<const char*>(data) + kField.size(),
                                                  len - kField.size()));
               !w) {
        jc.error = w.error().message;
    } else {
        jc.file.emplace(std::move(*t));
    }
    (void)sd_journal_set_data_threshold(j, saved);
    return jc;
}

namespace {

/// The COREDUMP= core of the entry at `cursor` in the journal of `directory` ("" = the local
/// system journal), through a handle of its own (sd_journal handles are not shared between
/// threads).
JournalCore journalCoreAt(const std::string& directory,
                          const std::string& cursor,
                          const UnpackLimits& limits) {
    sd_journal* j = nullptr;
    int r = directory.empty() ? sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY)
                              : sd_journal_open_directory(&j, directory.c_str(), 0);
    if (r < 0) {
        JournalCore jc;
        jc.error = fmt::format("cannot open the journal: {}", std::strerror(-r));
        return jc;
    }
    if (sd_journal_seek_cursor(j, cursor.c_str()) < 0 || sd_journal_next(j) <= 0 ||
        sd_journal_test_cursor(j, cursor.c_str()) <= 0) {
        sd_journal_close(j);
        JournalCore jc;
        jc.error = "the entry is no longer in the journal";
        return jc;
    }
    JournalCore jc = journalCoreHere(j, limits);
    sd_journal_close(j);
    return jc;
}

}  // namespace

void CoreRetries::later(const PendingCore& p) {
    std::lock_guard lk(mu);
    int& n = attempts[p.id];
    due.push_back(
        Due{p, n, std::chrono::steady_clock::now() + std::chrono::seconds(1 << std::min(n, 6))});
    ++n;
}

std::vector<PendingCore> CoreRetries::take() {
    std::lock_guard lk(mu);
    std::vector<PendingCore> out;
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(due, [&](const Due& d) {
        if (d.at > now) return false;
        out.push_back(d.core);
        return true;
    });
    return out;
}

WorkerJob unwindJournalCore(PendingCore p,
                            std::string where,
                            CrashOptions opt,
                            std::shared_ptr<CoreReadMarker> marker,
                            int deaths,
                            std::shared_ptr<CoreRetries> retries) {
    return [p = std::move(p),
            where = std::move(where),
            opt = std::move(opt),
            marker = std::move(marker),
            deaths,
            retries = std::move(retries)](Store& store, const std::function<bool()>&) -> bool {
        auto still = store.hasPendingCore(p.id);
        if (!still || !*still) return false;  // done meanwhile (queued twice: a reload)
        auto dropQueued = [&] {
            auto r = store.begin();
            if (r) r = store.removePendingCore(p.id);
            if (r) r = store.commit();
            if (!r) {
                (void)store.rollback();
                logLine(4,
                        fmt::format("queued core {}: {} (done again at the next start)",
                                    p.id,
                                    r.error().message));
            }
        };
        if (deaths >= kMaxCoreReadAttempts) {
            logLine(3,
                    fmt::format("queued core {} ({}) not read: gpufaultd died while reading it {} "
                                "times",
                                p.id,
                                p.cursor,
                                deaths));
            dropQueued();
            return false;
        }
        if (marker) marker->begin(MarkedPendingCore{p.id, 0});
        testPause("core-unwind");  // tests: the loop answers meanwhile
        coredump::FieldMap fields;
        auto j = nlohmann::json::parse(p.fields, nullptr, false);
        if (j.is_object())
            for (const auto& [k, v] : j.items())
                if (v.is_string()) fields.emplace(k, v.get<std::string>());
        bool stored = false, keep = false;
        if (auto e = coredump::parseCoredumpEntry(fields); !e) {
            logLine(4, "systemd-coredump entry not stored: " + e.error().message);
        } else {
            JournalCore jc = e->in_journal && !e->filename
                                 ? journalCoreAt(p.journal, p.cursor, opt.unpack)
                                 : JournalCore{};
            auto r = ingestCoredumpEntry(store, *e, where, opt, true, &jc);
            if (!r) {
                // Queued still, done at the next start; the store's own trouble (busy, disk
                // full) is also tried again by this run.
                keep = true;
                const bool again = retries && r.error().transient();
                if (again) retries->later(p);
                logLine(4,
                        fmt::format("systemd-coredump entry of pid {} not stored: {}{}",
                                    e->pid,
                                    r.error().message,
                                    again ? " (read again later)" : ""));
            } else {
                stored = !r->unchanged;
            }
        }
        if (marker) marker->end();
        if (!keep) dropQueued();
        return stored;
    };
}

}  // namespace gpufault::daemon
