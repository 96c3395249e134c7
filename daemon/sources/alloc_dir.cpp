#include "daemon/sources/alloc_dir.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "collectors/common/small_file.h"
#include "collectors/preload/alloc_log.h"
#include "collectors/process/proc.h"
#include "daemon/daemon.h"

namespace gpufault::daemon {

namespace {

constexpr int kFilesPerPoll = 16;    ///< the other sources run between batches
constexpr size_t kMaxFiles = 65536;  ///< files remembered at once (tmpfiles.d ages them)
/// Files of one user (root aside) remembered at once: a user who fills the directory with
/// junk names stops only their own files being followed, not other users'.
constexpr size_t kMaxFilesPerUser = 4096;
constexpr uint64_t kRefusalsLogged = 10;  ///< refusals logged per user (the rest are counted)
constexpr int64_t kPidMax = 1 << 22;      ///< PID_MAX_LIMIT

/// A decimal number without a leading zero (not empty); false for anything else.
bool decimal(std::string_view digits, int64_t& out) {
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return ec == std::errc() && p == digits.data() + digits.size() && !digits.empty() &&
           digits[0] != '0';
}

/// The pid in gpufaultd's /proc of the process that is `nspid` in pid namespace `pidns` (its
/// /proc/N/ns/pid names `pidns` and the last field of its `NSpid:` line is `nspid`); 0 when no
/// process seen here is (gone, or its namespace is not below ours). Reads every /proc/N/ns/pid
/// link: done once per file of another namespace.
int64_t hostPidOf(uint64_t pidns, int64_t nspid) {
    DIR* d = ::opendir("/proc");
    if (!d) return 0;
    const std::string want = fmt::format("pid:[{}]", pidns);
    int64_t found = 0;
    char link[64];
    while (auto* ent = ::readdir(d)) {
        int64_t n = 0;
        if (!decimal(ent->d_name, n)) continue;
        auto dir = fmt::format("/proc/{}", n);
        ssize_t len = ::readlink((dir + "/ns/pid").c_str(), link, sizeof link);
        if (len <= 0 || std::string_view(link, static_cast<size_t>(len)) != want) continue;
        auto status = readSmallFile(dir + "/status", 16384);
        if (!status) continue;
        auto at = status->find("\nNSpid:");
        if (at == std::string::npos) continue;
        auto end = status->find('\n', at + 1);
        std::string_view line(*status);
        line = line.substr(at + 7, end == std::string::npos ? std::string::npos : end - at - 7);
        auto last = line.find_last_of(" \t");
        int64_t inner = 0;
        if (last != std::string_view::npos && decimal(line.substr(last + 1), inner) &&
            inner == nspid) {
            found = n;
            break;
        }
    }
    ::closedir(d);
    return found;
}

using ProcNow = AllocDirSource::ProcNow;

/// What /proc/PID says now: its owner (the effective uid) and start time; nullopt when gone.
std::optional<ProcNow> procNow(int64_t pid) {
    struct stat st {};
    auto dir = fmt::format("/proc/{}", pid);
    if (::stat(dir.c_str(), &st) != 0) return std::nullopt;
    ProcNow p;
    p.uid = st.st_uid;
    if (auto text = readSmallFile(dir + "/stat", 4096)) p.start = parseStatStartTicks(*text);
    return p;
}

int64_t nowUs(clockid_t c) {
    struct timespec ts {};
    ::clock_gettime(c, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

int64_t mtimeNs(const struct stat& st) {
    return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

/// The inode of this process's pid namespace (/proc/self/ns/pid: "pid:[4026531836]").
std::optional<uint64_t> ownPidNamespace() {
    char buf[64];
    ssize_t n = ::readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
    std::string_view v(buf, n > 0 ? static_cast<size_t>(n) : 0);
    if (!v.starts_with("pid:[") || !v.ends_with("]")) return std::nullopt;
    v = v.substr(5, v.size() - 6);
    uint64_t ino = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), ino);
    if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
    return ino;
}

}  // namespace

AllocDirSource::AllocDirSource(Store& store, std::string dir, std::chrono::milliseconds interval)
    : store_(store), ownPidns_(ownPidNamespace()), dir_(std::move(dir)), interval_(interval) {
    if (auto b = readSmallFile("/proc/sys/kernel/random/boot_id", 128)) {
        bootId_ = *b;
        while (!bootId_.empty() && (bootId_.back() == '\n' || bootId_.back() == ' '))
            bootId_.pop_back();
    }
}

void AllocDirSource::scan() {
    struct stat st {};
    if (::lstat(dir_.c_str(), &st) != 0) {
        error_ = fmt::format("{} (looked for again)", std::strerror(errno));
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        error_ = "not a directory (a symbolic link is not followed)";
        return;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
        // Without the sticky bit any user could rename or remove another user's file.
        if (error_.empty())
            logLine(3,
                    fmt::format("allocations: {} is writable by others without the sticky bit "
                                "(chmod 1733): not followed",
                                dir_));
        error_ = fmt::format("mode {:o}: writable by others without the sticky bit: refused",
                             st.st_mode & 07777);
        return;
    }
    error_.clear();
    perUser_.clear();
    for (auto& [k, f] : files_) {
        f.seen = false;
        if (f.uid != 0) ++perUser_[f.uid];
    }
    scanDir(dir_, 0);
    for (auto it = files_.begin(); it != files_.end();) {
        // A file gone (or renamed away) is forgotten: its rows stay in the store.
        if (!it->second.seen && !queue_.contains(it->first) &&
            !uncommittedPrev_.contains(it->first)) {
            follow_.erase(it->first);
            it = files_.erase(it);
        } else
            ++it;
    }
}

void AllocDirSource::scanDir(const std::string& dir, int depth) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    std::vector<std::string> subdirs;
    while (auto* ent = ::readdir(d)) {
        std::string name = ent->d_name;
        if (name.empty() || name[0] == '.') continue;
        std::string path = dir + "/" + name;
        std::optional<uint64_t> pidns;
        if (int64_t pid = alloclog::pidOfFileName(name, pidns)) {
            consider(path, pid, pidns);
        } else if (depth == 0 && (ent->d_type == DT_DIR || ent->d_type == DT_UNKNOWN)) {
            subdirs.push_back(path);  // a run's own directory (gpufault run)
        }
    }
    ::closedir(d);
    for (const auto& s : subdirs) {
        struct stat st {};
        if (::lstat(s.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) scanDir(s, depth + 1);
    }
}

void AllocDirSource::consider(const std::string& path, int64_t pid, std::optional<uint64_t> pidns) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) return;
    Key key{st.st_dev, st.st_ino};
    auto it = files_.find(key);
    if (it == files_.end() || it->second.path != path || it->second.uid != st.st_uid) {
        if (it == files_.end()) {
            if (files_.size() >= kMaxFiles) return;
            if (st.st_uid != 0 && perUser_[st.st_uid] >= kMaxFilesPerUser) {
                if (overQuota_.insert(st.st_uid).second)
                    logLine(4,
                            fmt::format("allocations: uid {} has more than {} files in {}: its "
                                        "further files are not followed",
                                        st.st_uid,
                                        kMaxFilesPerUser,
                                        dir_));
                return;
            }
            if (st.st_uid != 0) ++perUser_[st.st_uid];
        }
        File f;
        f.path = path;
        f.pid = pid;
        f.uid = st.st_uid;
        // A file named for another pid namespace (a container's job) names the pid the process
        // has there: the host's /proc/PID is another process. Its pid here is looked up (the
        // process whose ns/pid is that namespace and whose innermost NSpid is PID).
        bool foreign = pidns && ownPidns_ && *pidns != *ownPidns_;
        f.proc_pid = foreign ? hostPidOf(*pidns, pid) : pid;
        // Trusted: root's file, or a file of the user the process runs as. /proc/PID belongs
        // to the process's effective uid (root for a process that is not dumpable).
        auto proc = st.st_uid == 0 ? std::nullopt : procNow(f.proc_pid);
        std::string why;
        if (st.st_uid == 0) {
            f.trusted = true;
        } else if (!proc && foreign && f.proc_pid == 0) {
            why = fmt::format(
                "pid {} of pid namespace {}: no process here has it (gone, or its namespace is "
                "not below gpufaultd's), so its owner cannot be checked",
                pid,
                *pidns);
        } else if (!proc) {
            // Gone: trusted only when this very file (device, inode, `start` line) was trusted
            // and stored before (a daemon restarted after its job ended).
            auto id = allocSourceIdentity(path);
            auto known = id ? store_.hasSource(*id) : db::Result<bool>(false);
            if (known && *known)
                f.trusted = true;
            else
                why = fmt::format("process {} gone before its owner could be checked", pid);
        } else if (proc->uid != st.st_uid) {
            why =
                foreign
                    ? fmt::format(
                          "owned by uid {}, but pid {} of pid namespace {} (pid {} "
                          "here) runs as uid {}",
                          st.st_uid,
                          pid,
                          *pidns,
                          f.proc_pid,
                          proc->uid)
                    : fmt::format(
                          "owned by uid {}, but pid {} runs as uid {}", st.st_uid, pid, proc->uid);
        } else {
            f.trusted = true;
            f.start = proc->start;
        }
        if (!f.trusted) {
            ++refused_;
            auto logged = ++refusalsLogged_[st.st_uid];
            if (logged <= kRefusalsLogged)
                logLine(4,
                        fmt::format("allocations: {} refused: {}{}",
                                    path,
                                    why,
                                    logged == kRefusalsLogged
                                        ? fmt::format(" (further refusals of uid {} are only "
                                                      "counted)",
                                                      st.st_uid)
                                        : ""));
        }
        it = files_.insert_or_assign(key, std::move(f)).first;
    }
    File& f = it->second;
    f.seen = true;
    bool same = f.size == st.st_size && f.mtime == mtimeNs(st);
    if (f.trusted && !f.closed && f.uid != 0 && same && (f.ended || f.source_id == 0) &&
        !otherPidNamespace(key) && ::access(fmt::format("/proc/{}", f.proc_pid).c_str(), F_OK) != 0)
        f.closed = true;  // ended after its last records were read (and its end stored)
    if (f.trusted && !f.closed && !same && std::chrono::steady_clock::now() >= f.not_before)
        queue_.insert(key);
    else if (f.trusted && !f.ended && f.source_id > 0 && recorderGone(f, key, procNow(f.proc_pid)))
        queue_.insert(key);  // its end is stored with the next read
}

bool AllocDirSource::otherPidNamespace(const Key& key) const {
    auto st = follow_.find(key);
    return st != follow_.end() && st->second.pidns && ownPidns_ && *st->second.pidns != *ownPidns_;
}

bool AllocDirSource::recorderGone(const File& f,
                                  const Key& key,
                                  const std::optional<ProcNow>& now) const {
    auto st = follow_.find(key);
    const AllocFollowState* rec = st != follow_.end() ? &st->second : nullptr;
    if (rec && rec->boot && !bootId_.empty() && *rec->boot != bootId_)
        return true;                           // recorded in another boot: it ended with that boot
    if (otherPidNamespace(key)) return false;  // a container's pid: our /proc cannot tell
    bool ourNs = rec && rec->pidns && ownPidns_;
    if (!now) return true;
    std::optional<uint64_t> start = f.start;
    if (rec && rec->start_ticks) start = static_cast<uint64_t>(*rec->start_ticks);
    if (!start || !now->start || *now->start == *start) return false;
    // Another process holds the pid. Of our namespace: the pid was reused, ours ended. Not
    // known: only a process started after ours can have taken its pid; one started before is
    // not its successor (the recorder's pid is another namespace's).
    return ourNs || *now->start > *start;
}

bool AllocDirSource::stillItsProcess(File& f) {
    if (f.uid == 0) return true;  // root may record for any pid
    auto now = procNow(f.proc_pid);
    if (!now) return true;  // ended: its last records are read (then closed)
    std::string why;
    if (now->uid != f.uid)
        why = fmt::format("pid {} now runs as uid {}, not {}", f.pid, now->uid, f.uid);
    else if (f.start && now->start != f.start)
        why = fmt::format("pid {} is now another process (started later)", f.pid);
    else
        return true;
    // The pid was reused (or its process changed owner): records written from now on could
    // not be told from records about the new process.
    f.trusted = false;
    ++refused_;
    logLine(4, fmt::format("allocations: {} refused from now on: {}", f.path, why));
    return false;
}

db::Result<bool> AllocDirSource::poll(Txn& txn) {
    auto now = std::chrono::steady_clock::now();
    if (queue_.empty() && (scanDue_ || now - lastScan_ >= interval_)) {
        scanDue_ = false;
        lastScan_ = now;
        scan();
    }
    for (int i = 0; i < kFilesPerPoll && !queue_.empty(); ++i) {
        Key key = *queue_.begin();
        queue_.erase(queue_.begin());
        auto it = files_.find(key);
        if (it == files_.end()) continue;
        File& f = it->second;
        struct stat st {};
        if (::lstat(f.path.c_str(), &st) != 0 || Key{st.st_dev, st.st_ino} != key) continue;
        if (!f.trusted || f.closed) continue;
        if (!stillItsProcess(f)) {
            if (f.source_id > 0 && !f.ended) {  // the pid's old process is gone: its end
                if (auto r = txn.ensure(); !r) return std::unexpected(r.error());
                uncommittedPrev_.try_emplace(key, f);
                if (auto e = store_.markAllocProcessEnded(
                        f.source_id, f.pid, nowUs(CLOCK_REALTIME), nowUs(CLOCK_MONOTONIC));
                    !e)
                    return std::unexpected(e.error());
                f.ended = true;
                ++uncommitted_;
            }
            continue;
        }
        // Looked at before the read, so that the read has every record the process wrote
        // (records appended after its end is stored are refused: docs/preload.md).
        auto before = procNow(f.proc_pid);
        bool ended = f.uid != 0 && !before && !otherPidNamespace(key);
        bool gone = !f.ended && (ended || recorderGone(f, key, before));
        std::optional<int64_t> running;  // the start ticks of the pid's process now
        if (before && before->start) running = static_cast<int64_t>(*before->start);
        if (auto r = txn.ensure(); !r) return std::unexpected(r.error());
        if (auto r = store_.savepoint(); !r) return std::unexpected(r.error());
        AllocFollowOptions opt;
        opt.owner = f.uid;
        opt.only_pid = f.pid;
        auto t0 = std::chrono::steady_clock::now();
        auto r = storeAllocLogInTxn(store_, f.path, opt, follow_[key]);
        auto t1 = std::chrono::steady_clock::now();
        bool endStored = false, lastRuns = false;
        auto fs = follow_.find(key);
        // A new start record of the process that holds the pid now: every earlier process of
        // the pid in the file has ended (a pid holds one process at a time).
        bool newer = r && r->processes > 0 && running && fs != follow_.end() &&
                     fs->second.start_ticks == running;
        if (r && (gone || newer) && r->source_id > 0) {
            // The recording process is gone: an upper bound of its end (docs/preload.md
            // "Reused pids"), so a later process with its pid is not joined to its allocations.
            // The pid's process now, when it recorded in this file too, is not ended.
            auto e = store_.markAllocProcessEnded(
                r->source_id, f.pid, nowUs(CLOCK_REALTIME), nowUs(CLOCK_MONOTONIC), running);
            if (!e) r = std::unexpected(e.error());
            endStored = r.has_value();
            lastRuns = running && fs != follow_.end() && fs->second.start_ticks == running;
        }
        if (r) bytesRead_ += r->bytes_read;
        if (!r) follow_.erase(key);
        if (auto s = r ? store_.releaseSavepoint() : store_.undoSavepoint(); !s)
            return std::unexpected(s.error());
        uncommittedPrev_.try_emplace(key, f);  // the state a rollback returns to
        // Read up to here whatever happened: a file that cannot be stored is not retried until
        // it changes.
        f.size = st.st_size;
        f.mtime = mtimeNs(st);
        f.not_before = t1 + 10 * (t1 - t0);
        f.closed = ended;
        if (!r) {
            ++errors_;
            logLine(4, fmt::format("allocations not stored: {}", r.error().message));
            continue;
        }
        f.source_id = r->source_id;
        if (r->processes > 0) f.ended = false;  // a new start record: a new process
        if (endStored) {
            f.ended = !lastRuns;
            ++uncommitted_;
        }
        if (r->after_end > 0)
            logLine(4,
                    fmt::format("allocations: {}: {} record(s) after the end of their process: "
                                "not stored",
                                f.path,
                                r->after_end));
        if (r->unchanged) continue;
        ++uncommitted_;
        ++stored_;
        allocations_ = allocations_ - std::min(f.allocations, allocations_) + r->allocations;
        f.allocations = r->allocations;
        for (const auto& w : r->warning_texts) logLine(5, "allocations: " + w);
    }
    return !queue_.empty();
}

void AllocDirSource::committed() {
    uncommitted_ = 0;
    uncommittedPrev_.clear();
}

void AllocDirSource::reset() {
    // Rolled back: the files stored since the last commit are read again.
    for (auto& [k, prev] : uncommittedPrev_) files_.insert_or_assign(k, prev);
    uncommittedPrev_.clear();
    follow_.clear();
    uncommitted_ = 0;
    queue_.clear();
    scanDue_ = true;
}

std::vector<StreamStatus> AllocDirSource::status() const {
    StreamStatus s;
    s.source = "allocations";
    s.name = dir_;
    size_t trusted = 0, closed = 0;
    for (const auto& [k, f] : files_) {
        trusted += f.trusted ? 1 : 0;
        closed += f.closed ? 1 : 0;
    }
    s.position = fmt::format(
        "{} file(s) followed, {} refused, {} not storable, {} closed (process "
        "ended), {} bytes read",
        trusted,
        refused_,
        errors_,
        closed,
        bytesRead_);
    s.evidence = allocations_;
    s.lag = queue_.size();
    s.error = error_;
    s.not_followed = refused_;
    s.key = "allocations " + dir_;
    return {s};
}

std::vector<int64_t> AllocDirSource::sourceIds() const {
    std::vector<int64_t> ids;
    for (const auto& [k, f] : files_)
        if (f.source_id > 0) ids.push_back(f.source_id);
    return ids;
}

}  // namespace gpufault::daemon
