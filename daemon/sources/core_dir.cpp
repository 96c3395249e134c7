#include "daemon/sources/core_dir.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <ctime>

#include "collectors/coredump/core_reader.h"
#include "collectors/coredump/systemd_coredump.h"
#include "daemon/daemon.h"

namespace gpufault::daemon {

namespace {

constexpr int kCoresPerPoll = 1;  ///< unwinding takes time: the other sources run between cores

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

CoreDirSource::CoreDirSource(Store& store,
                             std::vector<std::string> dirs,
                             CrashOptions opt,
                             std::chrono::milliseconds interval)
    : store_(store),
      dirs_(std::move(dirs)),
      opt_(std::move(opt)),
      interval_(interval),
      perDir_(dirs_.size(), 0) {}

void CoreDirSource::scan() {
    std::set<std::pair<std::string, FileState>> now;
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
            if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
            FileState fs{st.st_dev,
                         st.st_ino,
                         st.st_size,
                         static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
            auto key = std::pair{path, fs};
            if (seen_.contains(key)) continue;
            // Taken when unchanged since the last scan and older than 2 s.
            if (pending_.contains(key) && wall.tv_sec - st.st_mtim.tv_sec >= 2)
                queue_.insert(path + '\n' + std::to_string(std::get<3>(fs)));
            now.insert(key);
        }
        ::closedir(dir);
    }
    pending_ = std::move(now);
}

db::Result<bool> CoreDirSource::poll(Txn& txn) {
    auto t = std::chrono::steady_clock::now();
    if (queue_.empty() && t - lastScan_ >= interval_) {
        lastScan_ = t;
        scan();
    }
    for (int i = 0; i < kCoresPerPoll && !queue_.empty(); ++i) {
        auto item = *queue_.begin();
        queue_.erase(queue_.begin());
        auto path = item.substr(0, item.find('\n'));
        // Mark it seen whatever happens: a bad file is not retried until it changes.
        for (const auto& p : pending_)
            if (p.first == path) {
                seen_.insert(p);
                uncommittedSeen_.insert(p);
            }
        if (auto r = txn.ensure(); !r) return std::unexpected(r.error());
        // One core's rows stand or fall together: a failure halfway leaves the shared
        // transaction as it was.
        if (auto r = store_.savepoint(); !r) return std::unexpected(r.error());
        auto name = path.substr(path.rfind('/') + 1);
        db::Result<CoreIngestSummary> r = std::unexpected(db::Error{"not a core"});
        switch (classify(name)) {
            case What::Apport:
                r = ingestApportReport(store_, path, opt_, false);
                break;
            case What::Systemd:
                r = ingestSystemdCoreFile(store_, path, opt_, false);
                break;
            case What::Plain:
                if (!coredump::isCoreFile(path)) break;  // core.c, core-utils.log, …
                r = ingestCore(store_, path, opt_.read, false);
                break;
            case What::Skip:
                break;
        }
        if (!r) {
            if (auto u = store_.undoSavepoint(); !u) return std::unexpected(u.error());
            if (r.error().message == "not a core") continue;
            ++errors_;
            logLine(4, fmt::format("core not stored: {}", r.error().message));
            continue;
        }
        if (auto u = store_.releaseSavepoint(); !u) return std::unexpected(u.error());
        if (r->unchanged) continue;
        ++uncommitted_;
        ++stored_;
        for (size_t d = 0; d < dirs_.size(); ++d)
            if (path.starts_with(dirs_[d] + "/")) ++perDir_[d];
    }
    return !queue_.empty();
}

void CoreDirSource::committed() {
    uncommitted_ = 0;
    uncommittedSeen_.clear();
}

void CoreDirSource::reset() {
    // Rolled back: the cores read since the last commit are read again.
    for (const auto& s : uncommittedSeen_) seen_.erase(s);
    uncommittedSeen_.clear();
    uncommitted_ = 0;
    queue_.clear();
    pending_.clear();
}

std::vector<StreamStatus> CoreDirSource::status() const {
    std::vector<StreamStatus> out;
    for (size_t d = 0; d < dirs_.size(); ++d) {
        StreamStatus s;
        s.source = "cores";
        s.name = dirs_[d];
        s.position = fmt::format("{} cores stored, {} not readable", perDir_[d], errors_);
        s.evidence = perDir_[d];
        s.lag = queue_.size();
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace gpufault::daemon
