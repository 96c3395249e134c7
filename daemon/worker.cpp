#include "daemon/worker.h"

#include <fmt/format.h>
#include <pthread.h>

#include <csignal>

#include "analysis/diagnose.h"
#include "daemon/daemon.h"
#include "ingest/local_devices.h"

namespace gpufault::daemon {

namespace {

using Clock = std::chrono::steady_clock;

int64_t nanos(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

std::expected<std::unique_ptr<Worker>, std::string> Worker::start(
    WorkerOptions opt, std::function<void(const WorkerPass&)> done) {
    auto st = Store::open(opt.store_path, Store::Mode::ReadWrite);
    if (!st) return std::unexpected(st.error().message);
    std::unique_ptr<Worker> w(new Worker(std::move(opt), std::move(*st), std::move(done)));
    w->thread_ = std::thread([p = w.get()] { p->run(); });
    return w;
}

Worker::Worker(WorkerOptions opt, Store store, std::function<void(const WorkerPass&)> done)
    : opt_(std::move(opt)), store_(std::move(store)), done_(std::move(done)) {}

Worker::~Worker() {
    stop(Clock::now());
}

void Worker::request() {
    {
        std::lock_guard lk(mu_);
        pending_ = true;
        status_.queued = true;
    }
    cv_.notify_one();
}

void Worker::submit(WorkerJob job) {
    {
        std::lock_guard lk(mu_);
        jobs_.push_back(std::move(job));
        status_.jobs_queued = jobs_.size();
    }
    cv_.notify_one();
}

void Worker::stop(Clock::time_point deadline) {
    {
        std::lock_guard lk(mu_);
        if (!exiting_) deadline_ = nanos(deadline);
        exiting_ = true;
        exitingFlag_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
}

WorkerStatus Worker::status() const {
    std::lock_guard lk(mu_);
    return status_;
}

bool Worker::stopNow() const {
    return exitingFlag_.load() && nanos(Clock::now()) > deadline_.load();
}

void Worker::run() {
    // Signals belong to the loop's thread (Asio's signal_set).
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
    for (;;) {
        WorkerJob job;
        {
            std::unique_lock lk(mu_);
            cv_.wait(lk, [&] { return pending_ || exiting_ || !jobs_.empty(); });
            if (!exiting_ && !jobs_.empty()) {
                job = std::move(jobs_.front());
                jobs_.pop_front();
                status_.jobs_queued = jobs_.size();
                status_.busy = true;
            }
        }
        if (job) {
            bool stored = job(store_, [this] { return stopNow(); });
            std::lock_guard lk(mu_);
            status_.busy = false;
            ++status_.jobs_done;
            if (stored) pending_ = status_.queued = true;
            continue;
        }
        {
            std::unique_lock lk(mu_);
            if (!pending_) return;  // exiting with nothing asked for
            if (exiting_ && stopNow()) {
                logLine(5,
                        "incidents not recomputed before exit (longer than 1 s): the next "
                        "start does it");
                return;
            }
            pending_ = false;
            status_.queued = false;
            status_.busy = true;
        }
        bool failed = !pass();
        std::unique_lock lk(mu_);
        status_.busy = false;
        if (exiting_ && !pending_) return;
        if (failed) {
            // A store error (busy past its timeout, disk full): once more a second later.
            cv_.wait_for(lk, std::chrono::seconds(1), [&] { return exiting_; });
            if (exiting_) return;
            pending_ = true;
        }
    }
}

bool Worker::pass() {
    auto t0 = Clock::now();
    InPlaceOptions o;
    o.stop = [this] { return stopNow(); };
    o.max_rows = opt_.max_rows;
    o.max_txn = opt_.max_txn;
    auto r = recorrelateInPlace(store_, o);
    WorkerPass done;
    double diagnose_s = 0;
    std::string error;
    if (r) {
        done.incidents_changed = r->rows > 0;
        if (opt_.diagnose) {
            auto t1 = Clock::now();
            diagnosis::DiagnoseOptions d;
            d.stop = o.stop;
            d.local_devices = [this] {
                std::vector<diagnosis::DeviceFact> out;
                for (const auto& dev : listDevices(opt_.sysfs_root, opt_.proc_root))
                    out.push_back({dev.vendor, dev.target, dev.pci, dev.node, "this machine"});
                return out;
            };
            auto n = diagnosis::diagnoseIncidents(store_.db(), d);
            diagnose_s = since(t1);
            if (n)
                done.diagnosed = n->diagnosed;
            else
                error = "diagnosis: " + n.error().message;
        }
    } else {
        error = r.error().message;
    }
    bool interrupted = error == "interrupted" || error == "diagnosis: interrupted";
    if (interrupted)
        logLine(6, "correlation interrupted: exiting");
    else if (!error.empty())
        logLine(4, fmt::format("worker: {}; retrying in 1 s", error));
    {
        std::lock_guard lk(mu_);
        if (interrupted) {
            ++status_.interrupted;
        } else if (!error.empty()) {
            ++status_.failed;
            status_.error = error;
        } else {
            status_.error.clear();
        }
        if (r) {
            ++status_.correlations;
            status_.last_s = since(t0);
            status_.last_correlate_s = r->correlate_s;
            status_.last_write_s = r->write_s;
            status_.last_diagnose_s = diagnose_s;
            status_.last_records = r->records;
            status_.last_incidents = r->incidents;
            status_.last_rows = r->rows;
            status_.last_transactions = r->transactions;
            status_.diagnosed += static_cast<uint64_t>(done.diagnosed);
        }
    }
    if (r && done_) done_(done);
    return interrupted || error.empty();
}

}  // namespace gpufault::daemon
