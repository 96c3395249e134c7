// `gpufault run -- CMD ARGS…`: a job under observation, recorded as a run with its output.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/run_env.h"
#include "cli/run_job.h"
#include "collectors/common/redact.h"
#include "collectors/common/text.h"
#include "ingest/ingest.h"
#include "ingest/ingest_alloc.h"
#include "schema/queries.h"
#include "schema/store.h"

extern char** environ;

namespace gpufault::cli {

namespace {

namespace fs = std::filesystem;

/// Invalid UTF-8 in an argument or a variable is stored replaced, never thrown.
constexpr auto kReplace = nlohmann::json::error_handler_t::replace;

/// A message on stderr. Unlike fmt::print, it never throws: with stderr on a pipe its reader
/// has closed (`gpufault run … 2>&1 | head -1`), the run is still recorded.
template <typename... Args>
void say(fmt::format_string<Args...> f, Args&&... args) {
    std::string m = fmt::format(f, std::forward<Args>(args)...);
    (void)!std::fwrite(m.data(), 1, m.size(), stderr);
}

constexpr size_t kKeepSpools = 100;                ///< newest spool files kept
constexpr uintmax_t kKeepSpoolBytes = 2ull << 30;  ///< and at most this much in all

/// /var/lib/gpufault/spool for root, else $XDG_DATA_HOME/gpufault/spool (mode 0700: no other
/// user can add lines to a job's output).
std::string spoolDir() {
    if (::geteuid() == 0) return "/var/lib/gpufault/spool";
    if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
        return std::string(x) + "/gpufault/spool";
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "/tmp") + "/.local/share/gpufault/spool";
}

/// Keeps the newest kKeepSpools files and at most kKeepSpoolBytes; older ones are removed.
void pruneSpool(const std::string& dir) {
    std::vector<fs::directory_entry> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file(ec) && e.path().filename().string().starts_with("run-"))
            files.push_back(e);
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
        return a.path().filename() > b.path().filename();  // names sort by time: newest first
    });
    uintmax_t total = 0;
    for (size_t i = 0; i < files.size(); ++i) {
        total += files[i].file_size(ec);
        if (i >= kKeepSpools || (i > 0 && total > kKeepSpoolBytes)) fs::remove(files[i].path(), ec);
    }
    // Allocation record directories (run-….alloc) go with their output file.
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        auto name = e.path().filename().string();
        if (!e.is_directory(ec) || !name.starts_with("run-") || !name.ends_with(".alloc")) continue;
        auto log = e.path().parent_path() / (name.substr(0, name.size() - 6) + ".log");
        if (!fs::exists(log, ec)) fs::remove_all(e.path(), ec);
    }
}

/// The shim for --record-allocations: --preload, $GPUFAULT_PRELOAD, beside this binary (or in
/// the build tree's collectors/preload), else the package's /usr/lib/gpufault. "" if none.
std::string findPreloadShim(const std::string& given) {
    std::error_code ec;
    auto usable = [&](const fs::path& p) { return !p.empty() && fs::is_regular_file(p, ec); };
    if (!given.empty()) return usable(given) ? fs::absolute(given, ec).string() : "";
    if (const char* e = std::getenv("GPUFAULT_PRELOAD"); e && *e)
        return usable(e) ? fs::absolute(e, ec).string() : "";
    auto self = fs::read_symlink("/proc/self/exe", ec).parent_path();
    for (const fs::path& p : {self / "libgpufault-preload.so",
                              self / "../collectors/preload/libgpufault-preload.so",
                              self / "../lib/gpufault/libgpufault-preload.so",
                              fs::path("/usr/lib/gpufault/libgpufault-preload.so")})
        if (usable(p)) return fs::canonical(p, ec).string();
    return "";
}

std::string hostName() {
    char h[256] = {};
    ::gethostname(h, sizeof h - 1);
    return h;
}

std::string bootId() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string id;
    std::getline(in, id);
    return id;
}

/// gpufaultd's allocation directory as the package makes it (tmpfiles.d: 1733 root).
constexpr const char* kSharedAllocDir = "/run/gpufault-alloc";

/// True when `dir` is a directory owned by root with the sticky bit that we may create in:
/// gpufaultd's, where no other user can remove or replace our run directory.
bool usableSharedDir(const std::string& dir) {
    struct stat st {};
    return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
           (st.st_mode & S_ISVTX) && ::access(dir.c_str(), W_OK | X_OK) == 0;
}

/// Ingests every gpufault-alloc.<pid>.log the job's processes wrote, as allocations of run `id`.
void recordAllocations(Store& store, const std::string& dir, int64_t id) {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file(ec) && e.path().filename().string().starts_with("gpufault-alloc."))
            files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    uint64_t allocations = 0;
    for (const auto& f : files) {
        auto r = ingestAllocLog(store, f, id);
        if (!r) {
            say("gpufault run: {}\n", r.error().message);
            continue;
        }
        for (const auto& w : r->warning_texts) say("gpufault run: {}\n", w);
        allocations += r->allocations;
    }
    say("gpufault run: {} recorded by {} in {}\n",
        counted(static_cast<int64_t>(allocations), "allocation"),
        counted(static_cast<int64_t>(files.size()), "process", "processes"),
        dir);
}

}  // namespace

int cmdRun(const Global& g, const RunOptions& o) {
    if (o.command.empty()) {
        say("gpufault run: no command (gpufault run -- CMD ARGS…)\n");
        return 2;
    }
    JobSpec spec;
    spec.argv = o.command;
    if (o.amd_log_level) spec.env["AMD_LOG_LEVEL"] = std::to_string(*o.amd_log_level);
    if (o.amd_log_mask) {
        auto m = parseAmdLogMask(*o.amd_log_mask);
        if (!m) {
            say("gpufault run: --amd-log-mask: {}\n", m.error());
            return 2;
        }
        spec.env["AMD_LOG_MASK"] = fmt::format("0x{:x}", *m);
        if (!o.amd_log_level && !std::getenv("AMD_LOG_LEVEL")) spec.env["AMD_LOG_LEVEL"] = "3";
    }
    if (o.serialize) {
        spec.env["AMD_SERIALIZE_KERNEL"] = "3";
        spec.env["HIP_LAUNCH_BLOCKING"] = "1";
        spec.env["CUDA_LAUNCH_BLOCKING"] = "1";
    }
    spec.env["PYTHONUNBUFFERED"] = "1";
    std::string dir = o.spool_dir.empty() ? spoolDir() : o.spool_dir;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (o.spool_dir.empty() && !fs::is_directory(dir)) {
        // The default place cannot be made (a user without a home directory): the job still
        // runs, spooled to a private directory of TMPDIR (hostile review 17, i3 LOW 2: exit 2
        // before the job, indistinguishable from the job's own 2).
        const char* t = std::getenv("TMPDIR");
        std::string tmpl = fmt::format("{}/gpufault-spool-XXXXXX", t && *t ? t : "/tmp");
        if (::mkdtemp(tmpl.data())) {
            say("gpufault run: spool directory {}: {}; spooling to {} instead\n",
                dir,
                ec ? ec.message() : std::string("not a directory"),
                tmpl);
            dir = tmpl;
        }
    }
    ::chmod(dir.c_str(), 0700);
    std::string started = text::utcNowIso();
    std::string stamp;
    for (char c : started.substr(0, 19))
        if (c != '-' && c != ':') stamp += c;
    spec.spool = fmt::format("{}/run-{}Z-{}.log", dir, stamp, ::getpid());
    std::string allocDir;
    if (o.record_allocations) {
        std::string shim = findPreloadShim(o.preload);
        if (shim.empty()) {
            say("gpufault run: --record-allocations: libgpufault-preload.so not found{}; "
                "give --preload PATH\n",
                o.preload.empty() ? "" : " at " + o.preload);
            return 2;
        }
        // In gpufaultd's directory when there is one: the daemon stores the records while the
        // job runs (a kernel-logged fault meets them in its store even if this command dies);
        // the run directory is ours alone (0700), the daemon reads it as root.
        std::string shared = o.alloc_dir.empty() && usableSharedDir(kSharedAllocDir)
                                 ? std::string(kSharedAllocDir)
                                 : o.alloc_dir;
        if (!shared.empty()) {
            struct stat st {};
            if (::stat(shared.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
                say("gpufault run: --alloc-dir {}: not a directory\n", shared);
                return 2;
            }
            allocDir = fmt::format("{}/run-{}Z-{}", shared, stamp, ::getpid());
        } else {
            allocDir = spec.spool.substr(0, spec.spool.size() - 4) + ".alloc";
        }
        if ((shared.empty() ? !fs::create_directories(allocDir, ec)
                            : ::mkdir(allocDir.c_str(), 0700) != 0) ||
            ::chmod(allocDir.c_str(), 0700) != 0) {
            say("gpufault run: cannot create {}: {}\n",
                allocDir,
                ec ? ec.message() : std::strerror(errno));
            return 2;
        }
        const char* pre = std::getenv("LD_PRELOAD");
        spec.env["LD_PRELOAD"] = pre && *pre ? shim + ":" + pre : shim;
        spec.env["GPUFAULT_ALLOC_DIR"] = allocDir;
    }

    // The environment the job sees: ours plus what the options set.
    std::vector<std::string> envStrings;
    for (char** e = environ; e && *e; ++e) {
        std::string kv = *e;
        auto name = kv.substr(0, kv.find('='));
        if (!spec.env.count(name)) envStrings.push_back(kv);
    }
    for (const auto& [k, v] : spec.env) envStrings.push_back(k + "=" + v);
    std::vector<const char*> envp;
    for (const auto& s : envStrings) envp.push_back(s.c_str());
    envp.push_back(nullptr);
    nlohmann::json env = gpuEnvironment(envp.data());

    auto job = runJob(spec);
    if (!job) {
        say("gpufault run: {}\n", job.error());
        return 2;
    }
    int status = job->shellStatus();
    if (job->output_lost)
        say("gpufault run: our output stopped ({}); the job's whole output is in {}\n",
            std::strerror(job->output_lost),
            spec.spool);
    if (job->signal)
        say("gpufault run: the job was ended by signal {} ({})\n",
            *job->signal,
            sigabbrev_np(*job->signal) ? sigabbrev_np(*job->signal) : "?");
    pruneSpool(dir);

    RunRecord run;
    // Stored as the job ran it, less its secrets (--password X, --token=X, u:p@ in URLs).
    run.command = nlohmann::json(redactArgs(o.command)).dump(-1, ' ', false, kReplace);
    run.cwd = fs::current_path(ec).string();
    run.host = hostName();
    run.boot_id = bootId();
    run.started = job->started;
    run.ended = job->ended;
    if (job->exit_status) run.exit_status = *job->exit_status;
    if (job->signal) run.signal = *job->signal;
    run.pid = job->pid;
    run.pids = nlohmann::json(std::vector<pid_t>(job->pids.begin(), job->pids.end())).dump();
    run.env = env.dump(-1, ' ', false, kReplace);
    run.spool = spec.spool;

    fs::create_directories(fs::path(g.db).parent_path(), ec);
    auto store = Store::open(g.db, Store::Mode::ReadWrite);
    if (!store) {
        say("gpufault run: cannot write the store {} ({}); the output is kept in {}: "
            "gpufault --db PATH ingest {}\n",
            g.db,
            store.error().message,
            spec.spool,
            spec.spool);
        return status;
    }
    auto sum = ingestFile(*store, spec.spool);
    if (sum)
        run.source_id = sum->source_id;
    else
        say("gpufault run: {}\n", sum.error().message);
    auto id = store->addRun(run);
    if (!id) {
        say("gpufault run: {}\n", id.error().message);
        return status;
    }
    if (!allocDir.empty()) recordAllocations(*store, allocDir, *id);
    if (auto r = recorrelate(*store); !r) say("gpufault run: {}\n", r.error().message);
    uint64_t records = 0;
    if (sum)
        for (const auto& [k, n] : sum->evidence) records += n;
    say("gpufault run: run #{} recorded in {}: {} from {} of output\n",
        *id,
        g.db,
        counted(static_cast<int64_t>(records), "record"),
        sizeText(job->bytes));
    if (auto inc = queryIncidents(store->db()); inc)
        for (const auto& i : *inc)
            if (i.source == spec.spool)
                say("gpufault run: incident {} ({}) — gpufault show {}\n", i.id, i.kind, i.id);
    return status;
}

}  // namespace gpufault::cli
