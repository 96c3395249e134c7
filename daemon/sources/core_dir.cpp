#include "daemon/sources/core_dir.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <ctime>

#include "collectors/coredump/core_reader.h"
#include "collectors/coredump/systemd_coredump.h"
#include "daemon/daemon.h"
#include "daemon/test_pause.h"

namespace gpufault::daemon {

namespace {

enum class What { Skip, Systemd, Apport, Plain };

What classify(const std::string& name) {
    if (name.empty() || name[0] == '.') return What::Skip;  // systemd's `.#core…` temporaries
    if (name.ends_with(".crash")) return What::Apport;
    if (coredump::parseCoredumpFileName(name)) return What::Systemd;
    // core, core.PID, CUDA's core_…nvcudmp, ROCr's gpucore.PID
    if (name.starts_with("core") || name.starts_with("gpucore.")) return What::Plain;
    return What::Skip;
}

}  // namespace

CoreDirSource::CoreDirSource(std::vector<std::string> dirs,
                             CrashOptions opt,
                             std::chrono::milliseconds interval,
                             std::function<void(WorkerJob)> submit)
    : dirs_(std::move(dirs)),
      opt_(std::move(opt)),
      interval_(interval),
      submit_(std::move(submit)),
      counters_(std::make_shared<Counters>()) {
    counters_->perDir.assign(dirs_.size(), 0);
}

void CoreDirSource::scan() {
    ++scans_;
    {
        // A core the store could not take is read again, after 1, 2, 4 … 64 scans (hostile
        // review 155, HIGH 2: it was seen for good, its crash lost until a restart).
        std::vector<std::string> retry;
        {
            std::lock_guard lk(counters_->mu);
            retry.swap(counters_->retry);
        }
        for (const auto& path : retry) {
            Retry& r = retries_[path];
            r.from_scan = scans_ + (uint64_t{1} << std::min(r.attempts, 6));
            ++r.attempts;
        }
        for (auto it = retries_.begin(); it != retries_.end();) {
            if (it->second.from_scan > scans_) {
                ++it;
                continue;
            }
            std::erase_if(seen_, [&](const auto& k) { return k.first == it->first; });
            it->second.from_scan = UINT64_MAX;  // until the worker says it failed again
            ++it;
        }
    }
    std::set<std::pair<std::string, FileState>> now;
    std::vector<std::string> ready;
    struct timespec wall {};
    clock_gettime(CLOCK_REALTIME, &wall);
    for (const auto& d : dirs_) {
        DIR* dir = ::opendir(d.c_str());
        if (!dir) continue;  // not there yet: looked for again on the next scan
        while (auto* ent = ::readdir(dir)) {
            std::string name = ent->d_name;
            if (classify(name) == What::Skip) continue;
            std::string path = d + "/" + name;
            struct stat st {};
            // lstat: a symbolic link is not followed (whoever may write here could point it at
            // /etc/shadow or a FIFO); skipped with a warning, counted in `status`.
            if (::lstat(path.c_str(), &st) != 0) continue;
            if (S_ISLNK(st.st_mode)) {
                auto key = std::pair{path, FileState{st.st_dev, st.st_ino, 0, 0}};
                if (seen_.insert(key).second) {
                    logLine(
                        4,
                        fmt::format("core not stored: {}: a symbolic link (not followed)", path));
                    std::lock_guard lk(counters_->mu);
                    ++counters_->symlinks;
                }
                continue;
            }
            if (!S_ISREG(st.st_mode)) continue;
            FileState fs{st.st_dev,
                         st.st_ino,
                         st.st_size,
                         static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
            auto key = std::pair{path, fs};
            if (seen_.contains(key)) continue;
            // Taken when unchanged since the last scan and older than 2 s; marked seen
            // whatever happens to it: a bad file is not retried until it changes.
            if (pending_.contains(key) && wall.tv_sec - st.st_mtim.tv_sec >= 2) {
                seen_.insert(key);
                if (int deaths = deathsOf(killers_, path); deaths >= kMaxCoreReadAttempts) {
                    // Said at the start after the run that died reading it; at later starts
                    // only counted in status (hostile review 157, F3).
                    const MarkedCoreFile* died = nullptr;
                    if (marker_ && marker_->diedReading())
                        died = std::get_if<MarkedCoreFile>(&*marker_->diedReading());
                    if (died && died->path == path)
                        logLine(3,
                                fmt::format("core not read: {}: gpufaultd died while reading it {} "
                                            "times; not read again until it changes (`gpufault "
                                            "ingest` reads it by hand)",
                                            path,
                                            deaths));
                    std::lock_guard lk(counters_->mu);
                    ++counters_->killed;
                    continue;
                }
                ready.push_back(path);
                continue;
            }
            now.insert(key);
        }
        ::closedir(dir);
    }
    pending_ = std::move(now);
    std::sort(ready.begin(), ready.end());
    for (const auto& path : ready) {
        auto name = path.substr(path.rfind('/') + 1);
        What what = classify(name);
        size_t dir = 0;
        while (dir + 1 < dirs_.size() && !path.starts_with(dirs_[dir] + "/")) ++dir;
        {
            std::lock_guard lk(counters_->mu);
            ++counters_->queued;
        }
        // Runs on the worker's thread, with its own store connection and transactions (the
        // unwinding holds no lock on the store).
        auto opt = opt_;
        opt.read.follow_links = false;  // a file swapped for a link since the scan: refused
        submit_([path, what, dir, opt, counters = counters_, marker = marker_](
                    Store& store, const std::function<bool()>&) -> bool {
            if (marker) marker->begin(path);
            testPause("core-read");  // tests: kill the daemon while it reads a core
            db::Result<CoreIngestSummary> r = std::unexpected(db::Error{"not a core"});
            switch (what) {
                case What::Apport:
                    r = ingestApportReport(store, path, opt, true);
                    break;
                case What::Systemd:
                    r = ingestSystemdCoreFile(store, path, opt, true);
                    break;
                case What::Plain:
                    if (!coredump::isCoreFile(path)) break;  // core.c, core-utils.log, …
                    r = ingestCore(store, path, opt.read, true);
                    break;
                case What::Skip:
                    break;
            }
            if (marker) marker->end();
            std::lock_guard lk(counters->mu);
            --counters->queued;
            if (!r) {
                if (r.error().message == "not a core") return false;
                ++counters->errors;
                // The store's own trouble, not the core's: read it again later.
                const bool again = r.error().transient();
                logLine(4,
                        fmt::format("core not stored: {}{}",
                                    r.error().message,
                                    again ? " (read again later)" : ""));
                if (again) counters->retry.push_back(path);
                return false;
            }
            if (r->unchanged) return false;
            // A core that replaced a stored one of its crash (a cut copy, the journal entry's
            // or a report's head) is not one more (hostile review 151: status counted both).
            if (!r->replaced) ++counters->perDir[dir];
            return true;
        });
    }
}

db::Result<bool> CoreDirSource::poll(Txn&) {
    auto t = std::chrono::steady_clock::now();
    if (t - lastScan_ >= interval_) {
        lastScan_ = t;
        scan();
    }
    return false;
}

void CoreDirSource::reset() {
    // A rollback of the loop's transaction: the cores are the worker's, stored on their own.
}

uint64_t CoreDirSource::evidenceStored() const {
    std::lock_guard lk(counters_->mu);
    uint64_t n = 0;
    for (auto c : counters_->perDir) n += c;
    return n;
}

std::vector<StreamStatus> CoreDirSource::status() const {
    std::vector<StreamStatus> out;
    std::lock_guard lk(counters_->mu);
    for (size_t d = 0; d < dirs_.size(); ++d) {
        StreamStatus s;
        s.source = "cores";
        s.name = dirs_[d];
        s.position = fmt::format("{} cores stored, {} not readable, {} symbolic links skipped",
                                 counters_->perDir[d],
                                 counters_->errors,
                                 counters_->symlinks);
        if (counters_->killed)
            s.position +=
                fmt::format(", {} not read again (gpufaultd died reading it)", counters_->killed);
        s.evidence = counters_->perDir[d];
        s.lag = counters_->queued;
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace gpufault::daemon
