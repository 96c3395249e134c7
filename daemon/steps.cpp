// gpufaultd's start-up steps and teardown, each small and in order (daemon/daemon.h).
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "daemon/control.h"
#include "daemon/daemon.h"
#include "daemon/sources/alloc_dir.h"
#include "daemon/sources/core_dir.h"
#include "daemon/sources/file_tail.h"
#include "daemon/sources/journal.h"
#include "daemon/sources/kmsg.h"

namespace gpufault::daemon {

void logLine(int prio, const std::string& msg) {
    std::fprintf(stderr, "<%d>%s\n", prio, msg.c_str());
    std::fflush(stderr);
}

uint64_t storeFileBytes(const std::string& path) {
    uint64_t n = 0;
    for (const auto& p : {path, path + "-wal"}) {
        struct stat sb {};
        if (::stat(p.c_str(), &sb) == 0) n += static_cast<uint64_t>(sb.st_size);
    }
    return n;
}

StepResult loadConfigStep(State& s) {
    if (s.config_path.empty()) return StepResult::ok();  // built-in defaults
    auto c = loadConfig(s.config_path);
    if (!c) return StepResult::fatal(2, c.error().text());
    if (auto host = checkHost(*c); !host.empty()) {
        std::string text;
        for (const auto& e : host) text += (text.empty() ? "" : "\n") + e.text();
        return StepResult::fatal(2, text);
    }
    s.cfg = std::move(*c);
    return StepResult::ok();
}

StepResult openStoreStep(State& s) {
    std::error_code ec;
    auto dir = std::filesystem::path(s.cfg.store_path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    auto st = Store::open(s.cfg.store_path, Store::Mode::ReadWrite);
    if (!st) return StepResult::fatal(1, st.error().message);
    s.store.emplace(std::move(*st));
    s.txn = std::make_unique<Txn>(*s.store);
    return StepResult::ok();
}

StepResult openSourcesStep(State& s) {
    const Config& c = s.cfg;
    if (c.kmsg) {
        auto k = std::make_unique<KmsgSource>(*s.store, c.kmsg_path, readBootId(),
                                              c.dispatch_window);
        if (auto r = k->open(); !r) {
            // Hardening (ProtectKernelLogs=, PrivateDevices=) or a container: say so loudly;
            // the other sources still run.
            logLine(3, fmt::format("kernel log source off: {}", r.error().message));
        } else {
            s.kmsg = k.get();
            s.sources.push_back(std::move(k));
        }
    }
    CrashOptions crash;
    crash.unpack.max_bytes = c.core_max_mib << 20;
    crash.unpack.dir = c.core_tmp_dir;
    crash.read.limits.seconds = static_cast<double>(c.core_unwind_seconds);
    if (c.journal) {
        auto j = std::make_unique<JournalSource>(*s.store, c.journal_dir, c.journal_units,
                                                 readBootId(), c.dispatch_window);
        j->crashOptions() = crash;
        // Cores named by its entries are unwound on the worker's thread (a queued job dropped
        // at exit stays queued in the store for the next start).
        j->unwindOn([&s](WorkerJob job) {
            if (s.worker) s.worker->submit(std::move(job));
        });
        j->guardReads(s.core_marker, s.core_killers);
        if (auto r = j->open(); !r) {
            logLine(3, fmt::format("journal source off: {}", r.error().message));
        } else {
            s.journal = j.get();
            s.sources.push_back(std::move(j));
        }
    }
    if (!c.file_globs.empty()) {
        auto f = std::make_unique<FileTail>(*s.store,
                                            c.file_globs,
                                            c.dispatch_window,
                                            std::max<uint64_t>(2 * c.poll_ms, 2000),
                                            c.files_max_open,
                                            c.follow_hardlinks);
        f->excludeOwn({c.store_path, c.metrics_path});
        f->setCommitRule(c.batch_lines, c.batch_ms);
        s.files = f.get();
        s.sources.push_back(std::move(f));
    }
    if (!c.core_dirs.empty()) {
        auto d = std::make_unique<CoreDirSource>(
            c.core_dirs, crash, std::chrono::milliseconds(c.poll_ms), [&s](WorkerJob job) {
                if (s.worker) s.worker->submit(std::move(job));
            });
        d->guardReads(s.core_marker, s.core_killers);
        s.sources.push_back(std::move(d));
    }
    if (!c.alloc_dir.empty()) {
        struct stat st {};
        if (::stat(c.alloc_dir.c_str(), &st) != 0) {
            logLine(5,
                    fmt::format("allocations: {} not there: not followed (the package's "
                                "tmpfiles.d creates it; reload after creating it)",
                                c.alloc_dir));
        } else {
            auto a = std::make_unique<AllocDirSource>(
                *s.store, c.alloc_dir, std::chrono::milliseconds(c.poll_ms));
            s.allocs = a.get();
            s.sources.push_back(std::move(a));
        }
    }
    if (s.sources.empty()) logLine(4, "no sources enabled: nothing to collect");
    return StepResult::ok();
}

StepResult openControlStep(State& s) {
    if (s.cfg.socket_path.empty()) return StepResult::ok();
    auto srv = ControlServer::open(s);
    if (!srv) return StepResult::fatal(1, srv.error());
    s.control = std::move(*srv);
    return StepResult::ok();
}

StepResult startWorkerStep(State& s) {
    WorkerOptions o;
    o.store_path = s.cfg.store_path;
    o.diagnose = s.cfg.diagnose;
    o.sysfs_root = s.cfg.sysfs_root;
    o.proc_root = s.cfg.proc_root;
    auto w = Worker::start(std::move(o), [&s](const WorkerPass& p) {
        // On the worker's thread: the loop tells the watchers.
        boost::asio::post(s.io, [&s, p] {
            if (p.incidents_changed && s.control) s.control->published(true);
        });
    });
    if (!w) return StepResult::fatal(1, w.error());
    s.worker = std::move(*w);
    // What the previous run was reading when it died is not read again (until it changes).
    std::string marker = s.cfg.store_path + ".reading-core";
    if (!s.core_marker || s.core_marker->file() != marker) {
        s.core_marker = std::make_shared<CoreReadMarker>(marker);
        s.core_killers = s.core_marker->takeKillers();
        // Said of the core the previous run died reading, not of every earlier one at every
        // start (hostile review 155, LOW 6); those skipped are counted in status.
        if (const auto& k = s.core_marker->diedReading()) {
            const auto* f = std::get_if<MarkedCoreFile>(&*k);
            int deaths = f ? f->deaths : std::get<MarkedPendingCore>(*k).deaths;
            logLine(deaths >= kMaxCoreReadAttempts ? 3 : 4,
                    fmt::format("gpufaultd died while reading {} ({} of {} runs): {}",
                                f ? f->path
                                  : fmt::format("the core of queued journal entry {}",
                                                std::get<MarkedPendingCore>(*k).id),
                                deaths,
                                kMaxCoreReadAttempts,
                                deaths >= kMaxCoreReadAttempts ? "not read again until it changes"
                                                               : "read once more"));
        }
    }
    return StepResult::ok();
}

void stopWorkerStep(State& s) {
    if (!s.worker) return;
    s.worker->stop(s.stop_asked.value_or(std::chrono::steady_clock::now()) + kFinalCorrelation);
    s.worker.reset();
    // A clean stop, even in the middle of a core: nothing killed the daemon while reading it.
    if (s.core_marker) s.core_marker->end();
}

void flushStep(State& s) {
    if (!s.txn || !s.txn->open()) return;
    for (auto& src : s.sources)
        if (auto r = src->checkpoint(); !r) {
            logLine(3, fmt::format("final checkpoint failed: {}", r.error().message));
            s.txn->rollback();
            return;
        }
    if (auto r = s.txn->commit(); !r)
        logLine(3, fmt::format("final commit failed: {}", r.error().message));
    else
        for (auto& src : s.sources) src->committed();
}

void closeStep(State& s) {
    s.control.reset();
    s.files = nullptr;
    s.kmsg = nullptr;
    s.journal = nullptr;
    s.allocs = nullptr;
    s.sources.clear();
    if (s.txn) s.txn->rollback();
    s.txn.reset();
    // After a signal, SQLite's checkpoint of the write-ahead log on the last close (writing
    // the pages back, fsync: 0.6 s seen) is left to the next writer: the log holds every
    // commit, readers use it as while the daemon runs.
    if (s.store && s.stop_asked)
        sqlite3_db_config(s.store->db().handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    s.store.reset();
}

}  // namespace gpufault::daemon
