// gpufaultd's event loop (Boost.Asio, one thread): sources → batched commits; incidents and
// diagnoses are the worker thread's (daemon/worker.h), asked after commits.
#include <fmt/format.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>

#include "daemon/control.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "daemon/processes.h"
#include "daemon/sources/alloc_dir.h"
#include "daemon/sources/file_tail.h"
#include "daemon/sources/file_watch.h"
#include "daemon/sources/journal.h"
#include "daemon/sources/kmsg.h"
#include "ingest/ingest.h"
#include "schema/queries.h"

namespace gpufault::daemon {

namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class Loop {
  public:
    explicit Loop(State& s)
        : s_(s),
          signals_(s.io, SIGHUP),
          pollTimer_(s.io),
          commitTimer_(s.io),
          retryTimer_(s.io),
          correlateTimer_(s.io),
          watchdogTimer_(s.io),
          metricsTimer_(s.io),
          retentionTimer_(s.io),
          idleTimer_(s.io),
          kmsgWait_(s.io),
          journalWait_(s.io),
          inotify_(s.io),
          stopWait_(s.io) {}

    void start() {
        bootId_ = readBootId();
        if (auto m = maxEvidenceId(s_.store->db()); m) lastSnapshotEvidence_ = *m;
        // The last pass may have been interrupted (SIGTERM) halfway through its writes: the
        // worker checks once (a store that is up to date costs it a read, no write).
        if (s_.worker) s_.worker->request();
        waitSignal();
        waitStop();
        armSources();
        uint64_t usec = 0;
        if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
            watchdogPeriod_ = std::chrono::microseconds(usec / 2);
            watchdog();
        }
        if (!s_.cfg.metrics_path.empty()) metrics();
        if (s_.cfg.max_age_days > 0 || s_.cfg.max_store_mib > 0) retention();
        pump();
        sd_notify(0, "READY=1\nSTATUS=collecting");
        logLine(6, fmt::format("gpufaultd {} ready: store {}, {} source(s)", GPUFAULT_VERSION,
                               s_.cfg.store_path, s_.sources.size()));
    }

  private:
    void waitSignal() {
        signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
            if (ec) return;
            if (sig == SIGHUP) reload();
            waitSignal();
        });
    }

    /// SIGTERM and SIGINT stay blocked on every thread and are read from a signalfd: an idle
    /// loop wakes on it, and a busy one sees them pending (sigpending) at each pump, not only
    /// after the handlers queued before an Asio signal_set's handler (a fault flood queues
    /// several pumps of seconds each: 9-15 s from SIGTERM to its handler on a loaded machine).
    void waitStop() {
        if (!stopWait_.is_open()) {
            sigset_t set;
            sigemptyset(&set);
            sigaddset(&set, SIGTERM);
            sigaddset(&set, SIGINT);
            int fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
            if (fd < 0) {
                logLine(3, fmt::format("signalfd: {}", std::strerror(errno)));
                return;
            }
            stopWait_.assign(fd);
        }
        stopWait_.async_wait(asio::posix::stream_descriptor::wait_read,
                             [this](const boost::system::error_code& ec) {
                                 if (ec || stopping_) return;
                                 if (!stopIfAsked()) waitStop();
                             });
    }

    /// A SIGTERM or SIGINT is pending: stop (true). Cheap enough for every pump.
    bool stopIfAsked() {
        if (stopping_) return true;
        sigset_t pending;
        if (sigpending(&pending) != 0 ||
            (!sigismember(&pending, SIGTERM) && !sigismember(&pending, SIGINT)))
            return false;
        int sig = SIGTERM;
        struct signalfd_siginfo si {};
        if (stopWait_.is_open() &&
            ::read(stopWait_.native_handle(), &si, sizeof si) == static_cast<ssize_t>(sizeof si))
            sig = static_cast<int>(si.ssi_signo);
        stop(sig);
        return true;
    }

    void stop(int sig) {
        stopping_ = true;
        s_.stop_asked = Clock::now();
        logLine(6, fmt::format("signal {}: flushing and stopping", sig));
        sd_notify(0, "STOPPING=1");
        // What is pending is committed; when records arrived since the worker was last asked,
        // it gets one more pass, which the teardown (stopWorkerStep) lets run for
        // kFinalCorrelation.
        if (s_.store_error.empty() && s_.txn && s_.files)
            if (auto r = s_.files->finishDeleted(*s_.txn, Clock::now() + kDeletedReadBudget); !r) {
                logLine(3, fmt::format("stop: {}", r.error().message));
                s_.txn->rollback();
            }
        if (s_.store_error.empty() && s_.txn) commit();
        if (incidentsStale_ && s_.worker) s_.worker->request();
        s_.io.stop();
    }

    /// Readiness of /dev/kmsg, inotify events on the patterns' directories, the poll timer.
    void armSources() {
        if (s_.kmsg && s_.kmsg->fd() >= 0) {
            kmsgWait_.assign(::dup(s_.kmsg->fd()));
            waitKmsg();
        }
        if (s_.journal && s_.journal->fd() >= 0) {
            journalWait_.assign(::dup(s_.journal->fd()));
            waitJournal();
        }
        if ((s_.files || s_.allocs) && s_.cfg.inotify) {
            int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
            if (fd >= 0) {
                inotify_.assign(fd);
                addWatches();
                waitInotify();
            }
        }
        pollTick();
    }

    /// inotify watches on the patterns' directories and the allocation directory (again after
    /// a watched directory went: adding one that exists changes nothing). The file patterns
    /// are expanded only every FileTail::kWatchedRescan while every pattern's directory is
    /// watched where inotify sees every change; else at every poll tick.
    void addWatches() {
        const int fd = inotify_.native_handle();
        bool every = s_.files && s_.files->watchDirsCoverEveryPattern();
        if (s_.files)
            for (const auto& d : s_.files->watchDirs()) {
                const uint32_t mask = IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM |
                                      IN_DELETE | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF |
                                      IN_MASK_ADD;
                const int wd = ::inotify_add_watch(fd, d.c_str(), mask);
                struct stat st {};
                if (wd < 0 || ::stat(d.c_str(), &st) != 0 || !inotifySeesEveryChange(d)) {
                    every = false;
                    continue;
                }
                watchDirOf_[wd] = d;
                watched_[d] = {wd, st.st_dev, st.st_ino};
            }
        // Watches no pattern's path leads to any more (renamed over, a symbolic link moved, a
        // mount) go; one that another path still uses stays (two paths to one directory, two
        // directories swapped: hostile review 161).
        std::set<int> used;
        for (const auto& [d, w] : watched_) used.insert(w.wd);
        for (auto it = watchDirOf_.begin(); it != watchDirOf_.end();) {
            if (used.count(it->first)) {
                ++it;
                continue;
            }
            ::inotify_rm_watch(fd, it->first);
            it = watchDirOf_.erase(it);
        }
        // A new allocation file is looked at at once, while its process still runs (its owner
        // is checked against /proc/PID); growth is read on the poll timer. IN_MASK_ADD: the
        // directory may be a pattern's too.
        if (s_.allocs)
            ::inotify_add_watch(
                fd, s_.allocs->dir().c_str(), IN_CREATE | IN_MOVED_TO | IN_MASK_ADD);
        if (s_.files) s_.files->setWatched(every);
        if (s_.files && every != watchedLogged_) {
            logLine(6,
                    every ? fmt::format("files: inotify watches every pattern's directory: "
                                        "patterns expanded on its events (and every {} s)",
                                        FileTail::kWatchedRescan.count())
                          : "files: patterns expanded at every poll tick (a directory with a "
                            "wildcard, missing, or on a filesystem whose changes inotify may "
                            "not see)");
            watchedLogged_ = every;
        }
        rewatch_ = !every && s_.files && s_.files->watchDirsCoverEveryPattern();
    }

    void waitKmsg() {
        kmsgWait_.async_wait(asio::posix::stream_descriptor::wait_read,
                             [this](const boost::system::error_code& ec) {
                                 if (ec) return;
                                 pump();
                                 waitKmsg();
                             });
    }

    void waitJournal() {
        journalWait_.async_wait(asio::posix::stream_descriptor::wait_read,
                                [this](const boost::system::error_code& ec) {
                                    if (ec) return;
                                    if (s_.journal) s_.journal->changed();
                                    pump();
                                    waitJournal();
                                });
    }

    void waitInotify() {
        inotify_.async_wait(asio::posix::stream_descriptor::wait_read,
                            [this](const boost::system::error_code& ec) {
                                if (ec) return;
                                const WatchEvents w = drainWatchEvents(inotify_.native_handle());
                                if (w.names) {
                                    if (s_.files) s_.files->rescanSoon();
                                    if (s_.allocs) s_.allocs->rescanSoon();
                                }
                                if (w.contents && s_.files) {
                                    for (const auto& [wd, name] : w.written)
                                        if (auto d = watchDirOf_.find(wd);
                                            d != watchDirOf_.end() && !name.empty())
                                            s_.files->written(d->second + "/" + name);
                                    if (w.manyWritten) s_.files->writtenMany();
                                }
                                // A watch of a pattern's directory went (not one that
                                // addWatches() removed itself), or events were dropped.
                                bool lost = false;
                                for (int wd : w.lostWatches)
                                    lost = lost || wd < 0 || watchDirOf_.count(wd) > 0;
                                if (lost && s_.files) {
                                    s_.files->setWatched(false);  // until added again
                                    rewatch_ = true;
                                }
                                pump();
                                waitInotify();
                            });
    }

    void pollTick() {
        pollTimer_.expires_after(milliseconds(s_.cfg.poll_ms));
        pollTimer_.async_wait([this](const boost::system::error_code& ec) {
            if (ec) return;
            if (s_.files && s_.files->watched() && !watchesHold()) {
                s_.files->setWatched(false);  // this tick expands the patterns
                rewatch_ = true;
            }
            if (s_.files) s_.files->tick();
            if (rewatch_ && inotify_.is_open()) addWatches();  // a directory may exist now
            pump();
            pollTick();
        });
    }

    /// Reads every source once; commits when a batch is full, else arms the batch timer.
    void pump() {
        if (stopIfAsked()) return;
        if (!s_.store_error.empty() || !s_.txn) return;  // the retry timer resumes
        bool more = false;
        const auto started = std::chrono::steady_clock::now();
        for (auto& src : s_.sources) {
            if (stopIfAsked()) return;
            auto r = src->poll(*s_.txn);
            if (!r) return fail(r.error().message);
            more = more || *r;
        }
        uint64_t pending = 0;
        for (auto& src : s_.sources) pending += src->uncommittedLines();
        if (pending > linesAtLastPump_) armIdle();
        // The first uncommitted line was parsed during this pump at the earliest.
        if (pending > 0 && !firstPending_) firstPending_ = started;
        linesAtLastPump_ = pending;
        const auto waited = firstPending_ ? std::chrono::duration_cast<milliseconds>(
                                                std::chrono::steady_clock::now() - *firstPending_)
                                          : milliseconds(0);
        if (pending >= s_.cfg.batch_lines || (pending == 0 && s_.txn->open()) ||
            (pending > 0 && waited >= milliseconds(s_.cfg.batch_ms))) {
            // (nothing pending in an open transaction: committed at once, so that SQLite's
            // write lock is never held with nothing to store: hostile review 9, MEDIUM 3)
            commit();
        } else if (pending > 0 && !commitArmed_) {
            commitArmed_ = true;
            commitTimer_.expires_after(milliseconds(s_.cfg.batch_ms) - waited);
            commitTimer_.async_wait([this](const boost::system::error_code& ec) {
                if (!ec) commit();
            });
        }
        if (more && !morePosted_) {
            morePosted_ = true;
            asio::post(s_.io, [this] {
                morePosted_ = false;
                pump();
            });
        }
    }

    /// 200 ms after the last line fed, open blocks are completed and committed: a fault line
    /// at the end of a quiet log is stored without waiting for a next line.
    void armIdle() {
        idleTimer_.expires_after(milliseconds(200));
        idleTimer_.async_wait([this](const boost::system::error_code& ec) {
            if (ec || !s_.store_error.empty() || !s_.txn) return;
            for (auto& src : s_.sources)
                if (auto r = src->flushIdle(*s_.txn); !r) return fail(r.error().message);
            commit();
        });
    }

    void commit() {
        linesAtLastPump_ = 0;
        firstPending_.reset();
        commitArmed_ = false;
        commitTimer_.cancel();
        if (!s_.txn || !s_.txn->open()) return;
        for (auto& src : s_.sources)
            if (auto r = src->checkpoint(); !r) return fail(r.error().message);
        if (auto r = s_.txn->commit(); !r) return fail(r.error().message);
        for (auto& src : s_.sources) src->committed();
        ++s_.commits;
        uint64_t ev = 0;
        for (auto& src : s_.sources) ev += src->evidenceStored();
        if (ev != evidenceSeen_) {
            evidenceSeen_ = ev;
            scheduleCorrelate();
            snapshotProcesses();
        }
        if (s_.control) s_.control->published(false);
    }

    /// A store error (disk full, I/O error): roll back, forget what the sources held in
    /// memory, and retry from the committed checkpoints a second later. Nothing is lost as
    /// long as the inputs are still there.
    void fail(const std::string& msg) {
        if (s_.store_error.empty()) logLine(3, fmt::format("store error: {}; retrying", msg));
        s_.store_error = msg;
        sd_notifyf(0, "STATUS=store error: %s", msg.c_str());
        if (s_.txn) s_.txn->rollback();
        for (auto& src : s_.sources) src->reset();
        firstPending_.reset();
        commitArmed_ = false;
        commitTimer_.cancel();
        retryTimer_.expires_after(std::chrono::seconds(1));
        retryTimer_.async_wait([this](const boost::system::error_code& ec) {
            if (ec) return;
            logLine(5, "retrying the store");
            s_.store_error.clear();
            pump();
            if (s_.store_error.empty()) sd_notify(0, "STATUS=collecting");
        });
    }

    /// Kernel fault records name host pids: while such a process lives, what /proc says about
    /// it (NSpid, cgroup, modules) is stored beside the record. Only records the kernel wrote
    /// (Source::kernelRecord) count: a followed file or a unit's output may be written by any
    /// user, who must not make the daemon read /proc of a pid of their choice. A pid reused by
    /// a process that started after the record is skipped. At most 64 snapshots per commit.
    void snapshotProcesses() {
        EvidenceFilter f;
        f.after_id = lastSnapshotEvidence_;
        f.with_text = false;
        auto ev = queryEvidence(s_.store->db(), f);
        if (!ev) return;
        int taken = 0;
        for (const auto& e : *ev) {
            lastSnapshotEvidence_ = std::max(lastSnapshotEvidence_, e.id);
            bool kernel = e.e.kind == Kind::AmdgpuPageFault || e.e.kind == Kind::NvidiaXid ||
                          e.e.kind == Kind::CpuSegfault;
            if (!kernel || !e.e.pid || taken >= 64 || !fromKernel(e.source_id, e.e.line) ||
                !snapshotted_.insert(*e.e.pid).second)
                continue;
            auto p = snapshotProcess(*e.e.pid, bootId_);
            if (!p || !startedBefore(p->start_ticks, e.e.time.kernel_s)) continue;
            p->evidence_id = e.id;
            if (!s_.txn->ensure()) return;
            if (auto r = s_.store->addProcess(*p); !r) return fail(r.error().message);
            ++taken;
        }
        if (taken > 0 && s_.txn->open()) {
            if (auto r = s_.txn->commit(); !r) return fail(r.error().message);
        }
        if (snapshotted_.size() > 4096) snapshotted_.clear();
    }

    bool fromKernel(int64_t source_id, uint64_t line) const {
        for (const auto& src : s_.sources)
            if (src->kernelRecord(source_id, line)) return true;
        return false;
    }

    /// Records were committed: the worker is asked to recompute incidents (and diagnoses), at
    /// most every commit.correlate_ms. The loop never waits for it.
    void scheduleCorrelate() {
        incidentsStale_ = true;
        if (correlateArmed_) return;
        correlateArmed_ = true;
        auto since = Clock::now() - lastCorrelate_;
        auto wait = milliseconds(s_.cfg.correlate_ms) - since;
        correlateTimer_.expires_after(wait.count() > 0 ? wait : Clock::duration::zero());
        correlateTimer_.async_wait([this](const boost::system::error_code& ec) {
            correlateArmed_ = false;
            if (ec || !s_.store_error.empty()) return;
            if (s_.txn->open()) commit();
            if (s_.txn->open() || !s_.store_error.empty()) return scheduleCorrelate();
            lastCorrelate_ = Clock::now();
            incidentsStale_ = false;
            if (s_.worker) s_.worker->request();
        });
    }

    void watchdog() {
        sd_notify(0, "WATCHDOG=1");
        watchdogTimer_.expires_after(watchdogPeriod_);
        watchdogTimer_.async_wait([this](const boost::system::error_code& ec) {
            if (!ec) watchdog();
        });
    }

    /// Writes the metrics textfile every metrics.interval_ms. A failure (its directory removed
    /// since the start, a full disk) is logged once, not at every interval, and its end too.
    void metrics() {
        if (s_.store) {
            auto r = writeMetrics(s_);
            if (!r && !metricsFailing_)
                logLine(4,
                        fmt::format("metrics: {}; retried every {} ms, logged again once it "
                                    "works",
                                    r.error(),
                                    s_.cfg.metrics_ms));
            else if (r && metricsFailing_)
                logLine(5, fmt::format("metrics: {} written again", s_.cfg.metrics_path));
            metricsFailing_ = !r;
        }
        metricsTimer_.expires_after(milliseconds(s_.cfg.metrics_ms));
        metricsTimer_.async_wait([this](const boost::system::error_code& ec) {
            if (!ec) metrics();
        });
    }

    /// Drops the oldest sources beyond store.max_age_days / store.max_size_mib (never one
    /// being followed), then re-correlates; every minute.
    void retention() {
        if (s_.store && s_.store_error.empty()) {
            if (s_.txn->open()) commit();
            if (!s_.txn->open()) {
                std::vector<int64_t> keep;
                for (const auto& src : s_.sources)
                    for (auto id : src->sourceIds()) keep.push_back(id);
                auto n = s_.store->prune(static_cast<int64_t>(s_.cfg.max_age_days) * 86400,
                                         static_cast<int64_t>(s_.cfg.max_store_mib) << 20, keep);
                if (!n) {
                    logLine(4, fmt::format("retention: {}", n.error().message));
                } else if (*n > 0) {
                    logLine(6, fmt::format("retention: dropped {} source(s)", *n));
                    ++evidenceSeen_;  // forces the next commit to re-correlate
                    scheduleCorrelate();
                }
            }
        }
        retentionTimer_.expires_after(std::chrono::seconds(60));
        retentionTimer_.async_wait([this](const boost::system::error_code& ec) {
            if (!ec) retention();
        });
    }

    /// SIGHUP: a valid new configuration replaces the sources (their checkpoints make the
    /// restart lossless); an invalid one is reported and the running one stays.
    void reload() {
        auto c = loadConfig(s_.config_path);
        // Every error of the file (one line each), then what it asks of this host.
        std::vector<std::string> errors;
        if (!c) {
            ConfigError first = c.error();
            first.more.clear();
            errors.push_back(first.text());
            for (const auto& m : c.error().more) errors.push_back(m);
        } else {
            for (const auto& e : checkHost(*c)) errors.push_back(e.text());
        }
        if (!errors.empty()) {
            for (const auto& e : errors)
                logLine(3, fmt::format("reload: {}; keeping the running configuration", e));
            return;
        }
        logLine(6, fmt::format("reload: {}", s_.config_path));
        commit();
        // Counters of the streams that stay go on after the reload (same store only).
        CarriedCounters before;
        if (c->store_path == s_.cfg.store_path)
            for (const auto& src : s_.sources)
                for (auto& st : src->status())
                    if (!st.key.empty()) before.emplace(st.key, std::move(st));
        // Files held open: the new FileTail reads those it does not find again (deleted or
        // renamed away, even after this instant) to their end (same store).
        std::vector<FileTail::OpenFile> deleted;
        if (s_.files && c->store_path == s_.cfg.store_path) deleted = s_.files->openFiles();
        kmsgWait_.close();
        journalWait_.close();
        inotify_.close();
        watchDirOf_.clear();
        watched_.clear();
        pollTimer_.cancel();
        metricsTimer_.cancel();
        retentionTimer_.cancel();
        State& s = s_;
        s.sources.clear();
        s.files = nullptr;
        s.kmsg = nullptr;
        s.journal = nullptr;
        s.allocs = nullptr;
        bool newStore = c->store_path != s.cfg.store_path;
        Config old = s.cfg;
        s.cfg = std::move(*c);
        if (newStore) {
            s.txn->rollback();
            auto st = Store::open(s.cfg.store_path, Store::Mode::ReadWrite);
            if (!st) {
                logLine(3, fmt::format("reload: {}; keeping store {}", st.error().message,
                                       old.store_path));
                s.cfg.store_path = old.store_path;
            } else {
                s.txn.reset();
                s.store.emplace(std::move(*st));
                s.txn = std::make_unique<Txn>(*s.store);
                // The worker follows the store: the old one's pass is cut at once.
                if (s.worker) s.worker->stop(Clock::now());
                s.worker.reset();
                if (auto r = startWorkerStep(s); !r.proceed)
                    logLine(3, fmt::format("reload: {}", r.error));
                else
                    s.worker->request();
            }
        }
        (void)openSourcesStep(s);
        for (auto& src : s.sources) src->carry(before);
        if (s.files)
            s.files->carryOpen(std::move(deleted));
        else
            for (const auto& d : deleted) ::close(d.fd);
        if (!s.control || s.cfg.socket_path != old.socket_path) {
            // A moved socket: the old server is closed but kept alive (queued handlers of its
            // connections refer to it); an unchanged one keeps its clients across the reload.
            if (s.control) {
                s.control->close();
                s.retired_control.push_back(std::move(s.control));
            }
            if (auto r = openControlStep(s); !r.proceed)
                logLine(3, fmt::format("reload: {}", r.error));
        }
        armSources();
        if (!s.cfg.metrics_path.empty()) metrics();
        if (s.cfg.max_age_days > 0 || s.cfg.max_store_mib > 0) retention();
        pump();
    }

    State& s_;
    asio::signal_set signals_;
    asio::steady_timer pollTimer_, commitTimer_, retryTimer_, correlateTimer_, watchdogTimer_,
        metricsTimer_, retentionTimer_, idleTimer_;
    asio::posix::stream_descriptor kmsgWait_, journalWait_, inotify_, stopWait_;
    bool rewatch_ = false;               ///< add the inotify watches again at the next poll tick
    std::optional<bool> watchedLogged_;  ///< what addWatches() logged last
    std::unordered_map<int, std::string> watchDirOf_;  ///< inotify watch → the directory
    /// A pattern's directory as watched: its watch, and the directory it was (device, inode).
    struct WatchedDir {
        int wd = -1;
        dev_t dev = 0;
        ino_t ino = 0;
    };
    std::unordered_map<std::string, WatchedDir> watched_;  ///< by path (addWatches())
    /// Every watched path still leads to the directory watched (one stat() each): a parent
    /// renamed, a symbolic link moved or a mount made over it sends no event to the watch.
    bool watchesHold() const {
        for (const auto& [d, w] : watched_) {
            struct stat st {};
            if (::stat(d.c_str(), &st) != 0 || st.st_dev != w.dev || st.st_ino != w.ino)
                return false;
        }
        return true;
    }
    Clock::duration watchdogPeriod_{};
    Clock::time_point lastCorrelate_{};
    bool commitArmed_ = false, correlateArmed_ = false, morePosted_ = false, stopping_ = false;
    bool metricsFailing_ = false;  ///< the last metrics write failed (logged once)
    bool incidentsStale_ = false;  ///< records committed since the worker was last asked
    uint64_t evidenceSeen_ = 0, linesAtLastPump_ = 0;
    /// When the pump that parsed the oldest uncommitted line started (the 50 ms rule).
    std::optional<std::chrono::steady_clock::time_point> firstPending_;
    int64_t lastSnapshotEvidence_ = 0;
    std::string bootId_;
    std::set<int64_t> snapshotted_;  ///< pids already looked at (bounded)
};

}  // namespace

void runLoop(State& s) {
    Loop loop(s);  // installs the SIGHUP handler ...
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);  // ... so a SIGHUP pending since start-up is seen
    // SIGTERM and SIGINT stay blocked: the loop reads them from a signalfd (waitStop), which
    // also sees one pending since start-up.
    loop.start();
    s.io.run();
}

}  // namespace gpufault::daemon
