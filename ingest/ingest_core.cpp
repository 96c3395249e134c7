#include "ingest/ingest_core.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "collectors/common/demangle.h"
#include "ingest/core_fingerprint.h"
#include "schema/core_queries.h"
#include "schema/diagnosis_queries.h"

namespace gpufault {

std::string localWall(int64_t t) {
    time_t tt = static_cast<time_t>(t);
    struct tm tm {};
    localtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return buf;
}

namespace {

const coredump::Frame* firstSpecific(const std::vector<coredump::Frame>& frames) {
    for (const auto& f : frames)
        if (!coredump::isGenericFrame(f)) return &f;
    return frames.empty() ? nullptr : &frames.front();
}

}  // namespace

Evidence coreEvidence(const coredump::CoreReport& r, const std::string& wall) {
    const auto& n = r.layout.notes;
    Evidence e;
    e.kind = Kind::Coredump;
    e.line = 1;
    e.time.wall = wall;
    e.pid = n.pid;
    if (!n.comm.empty()) e.process = n.comm;
    e.tid = n.crashingTid();
    int signo = n.siginfo ? n.siginfo->signo : n.cursig.value_or(0);
    std::string what = fmt::format("core of {}[{}]", n.comm, n.pid.value_or(0));
    if (signo) {
        e.reason = coredump::signalName(signo);
        e.setAttr("signal", std::to_string(signo));
        what += ": " + *e.reason;
    }
    if (n.siginfo) {
        auto code = coredump::sigCodeName(n.siginfo->signo, n.siginfo->code);
        e.setAttr("si_code", code.empty() ? std::to_string(n.siginfo->code) : std::string(code));
        if (!code.empty()) what += fmt::format(" ({})", code);
        if (n.siginfo->addr) {
            // A data address for SIGSEGV and SIGBUS; for SIGILL, SIGFPE and SIGTRAP si_addr
            // is the instruction's, which no buffer distance or alignment concerns.
            if (n.siginfo->signo == SIGSEGV || n.siginfo->signo == SIGBUS) {
                e.address = n.siginfo->addr;
                e.address_exact = true;
            } else {
                e.setAttr("fault_pc", fmt::format("0x{:x}", *n.siginfo->addr));
            }
            what += fmt::format(" at 0x{:x}", *n.siginfo->addr);
        } else if (n.siginfo->code == coredump::kSiKernel && n.siginfo->signo == SIGSEGV) {
            what += " (general protection: no address)";
        }
    }
    if (r.stack) {
        e.setAttr("threads", std::to_string(r.stack->threads.size()));
        if (r.stack->partial) e.setAttr("stack_partial", *r.stack->partial);
        if (const auto* t = coredump::crashingThread(*r.stack); t && !t->frames.empty()) {
            const auto& f0 = t->frames.front();
            if (f0.module) e.module = std::filesystem::path(*f0.module).filename().string();
            e.module_offset = f0.module_offset;
            auto top = coredump::describeFrame(*firstSpecific(t->frames));
            e.setAttr("frame", top);
            what += "; " + top;
        }
    }
    if (!r.signature.hash.empty()) e.setAttr("stack", r.signature.hash);
    e.raw = what;
    return e;
}

CoreRecord coreRecord(const coredump::CoreReport& r) {
    const auto& n = r.layout.notes;
    CoreRecord c;
    c.kind = std::string(coredump::coreKindName(r.layout.kind));
    std::error_code ec;
    auto abs = std::filesystem::absolute(r.path, ec);
    c.path = ec ? r.path : abs.lexically_normal().string();
    c.size = static_cast<int64_t>(r.size);
    c.time = r.mtime;
    c.pid = n.pid;
    c.tid = n.crashingTid();
    c.uid = n.uid;
    if (!n.comm.empty()) c.process = n.comm;
    if (n.siginfo) {
        c.signal = n.siginfo->signo;
        c.si_code = n.siginfo->code;
        c.signal_addr = n.siginfo->addr;
    } else if (n.cursig) {
        c.signal = *n.cursig;
    }
    c.e_machine = r.layout.head.machine;
    if (!r.signature.hash.empty()) {
        c.signature = r.signature.hash;
        c.signature_frames = nlohmann::json(r.signature.keys).dump();
    }
    c.runtimes = nlohmann::json(r.runtimes).dump();
    c.seconds = r.seconds;
    if (r.stack) {
        c.threads_truncated = r.stack->threads_truncated;
        c.modules_missing = nlohmann::json(r.stack->modules_without_file).dump();
        c.threads = r.stack->threads;
    }
    if (r.gpu) {
        c.meta = coredump::toJson(*r.gpu).dump();
        if (!c.pid) c.pid = r.gpu->pid;
    }
    // A partial stack says why in meta (`stack_partial`), beside threads_truncated; the thread
    // cap (UnwindOptions::max_threads) the total the core's notes hold (`threads_total`).
    if (r.stack && r.stack->partial)
        c.meta = nlohmann::json{{"stack_partial", *r.stack->partial}}.dump();
    else if (r.stack && r.stack->threads_truncated)
        c.meta = nlohmann::json{{"threads_total", n.tids.size()}}.dump();
    // An --exe used without proof says so in meta (`exe_unverified`, `exe_named`: the path the
    // core names), for `stack` and `show` to print beside the exe.
    if (r.stack && r.stack->exe_refused) {  // never stored as the exe (cores.exe stays NULL)
        auto m = nlohmann::json::parse(c.meta.value_or("{}"), nullptr, false);
        if (!m.is_object()) m = nlohmann::json::object();
        m["exe_refused"] = *r.stack->exe_refused;
        c.meta = m.dump();
    }
    // Module files not used because they do not fit the core (`modules_refused`): `stack` and
    // `show` say so beside the frames.
    if (r.stack && !r.stack->modules_refused.empty()) {
        auto m = nlohmann::json::parse(c.meta.value_or("{}"), nullptr, false);
        if (!m.is_object()) m = nlohmann::json::object();
        m["modules_refused"] = r.stack->modules_refused;
        c.meta = m.dump();
    }
    if (r.stack && r.stack->exe_unverified) {
        auto m = nlohmann::json::parse(c.meta.value_or("{}"), nullptr, false);
        if (!m.is_object()) m = nlohmann::json::object();
        m["exe_unverified"] = *r.stack->exe_unverified;
        if (r.stack->exe_named) m["exe_named"] = *r.stack->exe_named;
        c.meta = m.dump();
    }
    std::map<std::string, CoreRecord::File> files;
    for (const auto& f : n.files) {
        auto [it, fresh] = files.try_emplace(f.path, CoreRecord::File{f.path, f.start, f.end});
        if (!fresh) {
            it->second.start = std::min(it->second.start, f.start);
            it->second.end = std::max(it->second.end, f.end);
        }
    }
    for (auto& [p, f] : files) c.files.push_back(std::move(f));
    return c;
}

namespace {
std::vector<std::string> mappedPaths(const std::vector<coredump::MappedFile>& files) {
    std::vector<std::string> out;
    out.reserve(files.size());
    for (const auto& f : files) out.push_back(f.path);
    return out;
}
}  // namespace

bool crashTopsDisagree(const std::vector<coredump::Frame>& a,
                       const std::vector<coredump::Frame>& b) {
    for (size_t i = 0; i < 3 && i < a.size() && i < b.size(); ++i) {
        const auto &x = a[i], &y = b[i];
        if (!x.module || !y.module || !x.module_offset || !y.module_offset) break;
        if (std::filesystem::path(*x.module).filename() !=
                std::filesystem::path(*y.module).filename() ||
            *x.module_offset != *y.module_offset)
            return true;
    }
    return false;
}

db::Result<std::optional<EntryCrashCandidate>> findCoreOfCrash(
    db::Db& d,
    int64_t pid,
    int64_t signal,
    const std::string& process,
    int64_t time,
    const std::vector<coredump::Frame>& frames,
    bool with_file,
    const std::optional<std::string>& exe,
    const std::vector<std::string>& mapped) {
    // The entry's executable is one of the core's files (hostile review 152, LOW 1: an entry of
    // /usr/bin/other joined a core of crashmain of the same pid and command).
    auto exeMapped = [](const std::optional<std::string>& e, const std::vector<std::string>& m) {
        if (!e || e->empty() || m.empty()) return true;  // nothing to compare
        auto name = std::filesystem::path(*e).filename();
        return std::any_of(m.begin(), m.end(), [&](const auto& p) {
            return std::filesystem::path(p).filename() == name;
        });
    };
    auto cands = queryCoresOfEntryCrash(d, pid, signal, process, with_file);
    if (!cands) return std::unexpected(cands.error());
    for (const auto& c : *cands) {
        if (c.time < time - kSameCrashWindow || c.time > time + kSameCrashWindow) continue;
        if (with_file) {
            auto files = queryCoreFilePaths(d, c.id);
            if (!files) return std::unexpected(files.error());
            if (!exeMapped(exe, *files)) continue;
        } else if (!exeMapped(c.exe, mapped)) {
            continue;
        }
        auto threads = queryCoreThreads(d, c.id, false);
        if (!threads) return std::unexpected(threads.error());
        if (!threads->empty() && crashTopsDisagree(threads->front().frames, frames)) continue;
        return c;
    }
    return std::nullopt;
}

std::string replacedCoreWarning(int64_t core, const std::string& path) {
    return fmt::format(
        "core {} from {} is the same crash: replaced by this one (stored once)", core, path);
}

db::Result<CoreIngestSummary> ingestCore(Store& store,
                                         const std::string& path,
                                         const coredump::ReadOptions& opt,
                                         bool own_txn,
                                         const CoreIngestHooks& hooks) {
    // `code`: SQLite's, kept for a store error (gpufaultd reads a core again after one).
    auto fail = [&](const std::string& m, int code = 0) {
        return std::unexpected(db::Error{path + ": " + m, code});
    };
    // Never blocks: a FIFO, a device or a directory is "not a regular file" (hostile12c).
    auto opened = coredump::openRegular(path, opt.follow_links);
    if (!opened) return std::unexpected(db::Error{opened.error().message});
    // One descriptor for every read (identity, content fingerprint, notes, the unwinding
    // child): a core renamed over `path` meanwhile is not read half from each file (hostile
    // review 148, HIGH 1). The others open it again as /proc/self/fd/N: the same open file.
    struct Fd {
        int fd;
        ~Fd() { ::close(fd); }
    } held{*opened};
    const int fd = held.fd;
    const std::string self = fmt::format("/proc/self/fd/{}", fd);
    // Their messages name the file as given, not /proc/self/fd/N.
    auto named = [&](std::string m, int code = 0) {
        for (auto at = m.find(self); at != std::string::npos; at = m.find(self, at + path.size()))
            m.replace(at, self.size(), path);
        return db::Error{std::move(m), code};
    };
    struct stat st {};
    std::string head(4096, '\0');
    ssize_t got = ::fstat(fd, &st) == 0 ? ::pread(fd, head.data(), head.size(), 0) : -1;
    if (got < 0) return fail(std::strerror(errno));
    head.resize(static_cast<size_t>(got));
    if (hooks.after_open) hooks.after_open();

    SourceIdentity id{path,
                      "core",
                      static_cast<int64_t>(st.st_dev),
                      static_cast<int64_t>(st.st_ino),
                      coreSourceFingerprint(head,
                                            static_cast<uint64_t>(st.st_size),
                                            int64_t{st.st_mtim.tv_sec} * 1000000000 +
                                                st.st_mtim.tv_nsec)};
    CoreIngestSummary sum;
    sum.path = path;
    if (own_txn)
        if (auto r = store.begin(); !r) return std::unexpected(r.error());
    auto src = store.source(id);
    if (own_txn)
        if (auto rb = store.rollback(); !rb) return std::unexpected(rb.error());
    if (!src) return std::unexpected(src.error());
    if (src->complete) {
        sum.unchanged = true;
        return sum;
    }
    // The same content under another path or name (a copy, `gpucore.N`): stored once.
    auto content = fileCoreFingerprint(self);
    if (!content) return std::unexpected(named(content.error().message));
    auto same = sameStoredCore(store.db(), self, *content);
    if (!same) return std::unexpected(named(same.error().message, same.error().code));
    if (*same) {
        sum.unchanged = true;
        sum.same_as = fmt::format("core {} from {}", (*same)->first, (*same)->second);
        return sum;
    }

    // The same crash, one of the two cut (a cut `.zst` and its raw core): one core, the more
    // complete one's.
    auto prefix = prefixStoredCore(store.db(), self, *content);
    if (!prefix) return std::unexpected(named(prefix.error().message, prefix.error().code));
    if (*prefix && (*prefix)->stored_longer) {
        sum.unchanged = true;
        sum.same_as = fmt::format(
            "core {} from {}, of which this cut core is a prefix", (*prefix)->id, (*prefix)->path);
        return sum;
    }

    coredump::ReadOptions through = opt;
    through.follow_links = true;  // /proc/self/fd/N: `path` itself was opened as `opt` says
    through.name = opt.name.value_or(path);
    auto report = coredump::readCore(self, through);
    if (!report) return std::unexpected(named(report.error().message));
    report->path = path;
    if (report->unwind_error) report->unwind_error = named(*report->unwind_error).message;
    // Written to while read (a writer not done, a file rewritten in place): the fingerprint
    // and the notes may be of different bytes. Nothing is stored; the next scan reads it whole.
    struct stat now {};
    if (::fstat(fd, &now) != 0) return fail(std::strerror(errno));
    if (now.st_size != st.st_size || now.st_mtim.tv_sec != st.st_mtim.tv_sec ||
        now.st_mtim.tv_nsec != st.st_mtim.tv_nsec)
        return fail(
            fmt::format("changed while read (size {} then {} bytes, mtime {}.{:09} then "
                        "{}.{:09}): not stored",
                        st.st_size,
                        now.st_size,
                        st.st_mtim.tv_sec,
                        st.st_mtim.tv_nsec,
                        now.st_mtim.tv_sec,
                        now.st_mtim.tv_nsec));
    CoreProvenance prov;
    prov.supersedes = *prefix;
    prov.content_fingerprint = *content;
    // --exe: stored (cores.exe) and inventoried by diagnoses, unless refused (another
    // build-id, not an ELF file): then only meta `exe_refused` says why, and the frames did not
    // use it.
    if (opt.unwind.exe && !(report->stack && report->stack->exe_refused))
        prov.exe = std::filesystem::absolute(*opt.unwind.exe).lexically_normal().string();
    // A systemd-coredump entry or apport report of this crash stored without its core ("core
    // not kept", no CoreDump): this core takes it over (hostile review 151, MED 3: the two
    // were 2 cores and 2 incidents in either order).
    const auto& n = report->layout.notes;
    if (!prov.supersedes && report->layout.kind == coredump::CoreKind::Cpu && n.pid && n.siginfo &&
        !n.comm.empty()) {
        static const std::vector<coredump::Frame> kNone;
        const auto* crashed = report->stack ? coredump::crashingThread(*report->stack) : nullptr;
        auto entry = findCoreOfCrash(store.db(),
                                     *n.pid,
                                     n.siginfo->signo,
                                     n.comm,
                                     st.st_mtim.tv_sec,
                                     crashed ? crashed->frames : kNone,
                                     false,
                                     std::nullopt,
                                     mappedPaths(n.files));
        if (!entry) return fail(entry.error().message);
        if (*entry)
            prov.takes_over = PrefixCore{
                (*entry)->id,
                (*entry)->source_id,
                (*entry)->path.empty() ? "a " + (*entry)->origin + " record" : (*entry)->path,
                false};
    }
    auto r = storeCoreReport(store, id, *report, prov, own_txn);
    if (!r) return fail(r.error().message, r.error().code);
    // Renamed over meanwhile: what was stored is the file opened, whole; the new one at `path`
    // is another source, read on its own.
    if (struct stat at{};
        ::stat(path.c_str(), &at) == 0 && (at.st_ino != st.st_ino || at.st_dev != st.st_dev))
        r->warnings.push_back(fmt::format(
            "replaced while read: the core stored is the file opened (pid {}); the file now at "
            "this path is another one",
            report->layout.notes.pid.value_or(report->gpu ? report->gpu->pid.value_or(0) : 0)));
    return r;
}

namespace {

/// The part of a GPU core's `coredump` record its file name gives: pid, time, `vendor`.
Evidence gpuCoreRecord(const coredump::CoreReport& r, const std::string& wall, const char* vendor) {
    Evidence e;
    e.kind = Kind::Coredump;
    e.vendor = vendor;
    e.line = 1;
    e.time.wall = wall;
    e.pid = r.gpu->pid;
    return e;
}

}  // namespace

/// Grids a CUDA GPU core's record names in its text.
constexpr size_t kMaxGridsInText = 8;

std::optional<Evidence> cudaCoreEvidence(const coredump::CoreReport& r, const std::string& wall) {
    if (!r.gpu || !r.gpu->pid) return std::nullopt;
    Evidence e = gpuCoreRecord(r, wall, "nvidia");
    e.reason = "CUDA GPU core";
    std::string what = fmt::format("CUDA GPU core of pid {}", *r.gpu->pid);
    // The first kMaxGridsInText grids are named in the text (`gpufault cores --json` has all):
    // a forged core's 1 024 grids of long names made one record of many MiB.
    size_t listed = 0;
    for (const auto& g : r.gpu->grids) {
        if (!g.kernel.empty() && !e.kernel) e.kernel = g.kernel;
        if (!e.tid && g.host_tid) e.tid = g.host_tid;
        if (listed++ == kMaxGridsInText) {
            what += fmt::format("; {} more grids", r.gpu->grids.size() - kMaxGridsInText);
            break;
        }
        what += fmt::format("; grid {} on device {}{}: {}x{}x{} blocks of {}x{}x{}, host thread {}",
                            g.grid,
                            g.dev,
                            g.kernel.empty() ? "" : " " + demangle(g.kernel),
                            g.grid_dim[0],
                            g.grid_dim[1],
                            g.grid_dim[2],
                            g.block_dim[0],
                            g.block_dim[1],
                            g.block_dim[2],
                            g.host_tid);
    }
    if (!r.gpu->params.empty()) e.setAttr("pointer_args", std::to_string(r.gpu->params.size()));
    // The first warp (table order) a CUDA exception stopped names the record's cause.
    if (!r.gpu->exceptions.empty()) {
        const auto& x = r.gpu->exceptions.front();
        auto name = coredump::cudaExceptionName(x.code);
        std::string exception =
            name.empty() ? fmt::format("exception {}", x.code) : std::string(name);
        e.reason = "CUDA GPU core: " + exception;
        e.setAttr("exception", exception);
        if (x.pc) e.setAttr("exception_pc", fmt::format("0x{:x}", *x.pc));
        e.setAttr("exception_warps", std::to_string(r.gpu->exception_warps));
        // Only what the tables' links reached is stated (a forged or cut core's zeros are no
        // place: hostile review 151).
        std::string place =
            x.sm_known ? fmt::format("device {} SM {}", x.dev, x.sm) : std::string("SM unknown");
        if (x.lanes && x.warp_known) place += fmt::format(" warp {}", x.warp);
        if (x.lanes && x.block_known)
            place += fmt::format(" block ({},{},{})", x.block[0], x.block[1], x.block[2]);
        if (x.lanes)
            place += fmt::format(" thread ({},{},{})", x.thread[0], x.thread[1], x.thread[2]);
        what += fmt::format("; {} on {}{}, {} warps or SMs with an exception",
                            exception,
                            place,
                            x.pc ? fmt::format(" pc 0x{:x}", *x.pc) : "",
                            r.gpu->exception_warps);
    }
    e.raw = what;
    return e;
}

std::optional<Evidence> rocrCoreEvidence(const coredump::CoreReport& r, const std::string& wall) {
    if (!r.gpu || !r.gpu->pid) return std::nullopt;
    Evidence e = gpuCoreRecord(r, wall, "amd");
    e.setAttr("gpu_core", "rocr");
    if (r.gpu->target) e.setAttr("target", *r.gpu->target);
    std::string what = fmt::format(
        "ROCr GPU core of pid {}{}", *r.gpu->pid, r.gpu->target ? " (" + *r.gpu->target + ")" : "");
    if (!r.gpu->rocr) {
        // No reason without the note: nothing else in the core states one, and a label would
        // become the reason of the incident it joins (an amdgpu fault states none).
        e.raw = what;
        return e;
    }
    const auto& s = *r.gpu->rocr;
    // The KFD snapshot (NT_AMDGPU_CORE_STATE): the most specific exception names the cause,
    // its queue and agent the device.
    auto f = coredump::rocrFault(s);
    if (f.cause) {
        e.reason = fmt::format("ROCr GPU core: {}", f.cause->words);
        e.setAttr("exception", std::string(f.cause->name));
    }
    std::vector<std::string> all;  // every exception set, queues' then agents', once each
    auto add = [&all](const std::vector<std::string>& xs) {
        for (const auto& x : xs)
            if (std::find(all.begin(), all.end(), x) == all.end()) all.push_back(x);
    };
    for (const auto& q : s.queues) add(q.exceptions);
    for (const auto& a : s.agents) add(a.exceptions);
    if (!all.empty()) {
        std::string joined;
        for (const auto& x : all) joined += (joined.empty() ? "" : ",") + x;
        e.setAttr("exceptions", joined);
    }
    if (f.queue) {
        e.setAttr("queue_id", std::to_string(f.queue->queue_id));
        e.setAttr("queue_type", coredump::queueTypeName(f.queue->queue_type));
    }
    if (f.agent) {
        if (!f.agent->pci.empty()) e.pci = f.agent->pci;
        e.setAttr("gpu_id", std::to_string(f.agent->gpu_id));
        if (f.agent->partition) e.setAttr("partition", std::to_string(*f.agent->partition));
    } else if (f.queue) {
        e.setAttr("gpu_id", std::to_string(f.queue->gpu_id));
    }
    if (s.kfd_major || s.kfd_minor)
        e.setAttr("kfd_version", fmt::format("{}.{}", s.kfd_major, s.kfd_minor));
    e.setAttr("agents", std::to_string(s.agents_stated));
    e.setAttr("queues", std::to_string(s.queues_stated));
    if (!s.warnings.empty()) e.setAttr("core_state_warning", s.warnings.front());
    if (f.cause)
        what += fmt::format("; {}{}{}",
                            f.cause->name,
                            f.queue ? fmt::format(" on queue {} ({})",
                                                  f.queue->queue_id,
                                                  coredump::queueTypeName(f.queue->queue_type))
                                    : "",
                            f.agent ? fmt::format(" of GPU {} (gpu_id {})",
                                                  f.agent->pci.empty() ? "?" : f.agent->pci,
                                                  f.agent->gpu_id)
                                    : "");
    else
        what += "; no exception in the KFD snapshot";
    // The counts read; a stated count that differs (a cut or forged snapshot) is said as such.
    auto counted = [](size_t read, uint32_t stated, const char* what) {
        return read == stated ? fmt::format("{} {}", read, what)
                              : fmt::format("{} {} read of {} stated", read, what, stated);
    };
    what += fmt::format("; {}, {}",
                        counted(s.agents.size(), s.agents_stated, "agents"),
                        counted(s.queues.size(), s.queues_stated, "queues"));
    e.raw = what;
    return e;
}

std::vector<Operand> cudaParamOperands(const coredump::CoreReport& r) {
    std::vector<Operand> out;
    if (!r.gpu) return out;
    const auto& ps = r.gpu->params;
    for (const auto& p : ps) {
        Operand o;
        o.line = 1;
        o.pid = r.gpu->pid;
        bool oneGrid = std::all_of(ps.begin(), ps.end(), [&](const auto& q) {
            return q.dev == p.dev && q.grid == p.grid;
        });
        o.name = oneGrid ? fmt::format("param+0x{:x}", p.offset)
                         : fmt::format("dev{}.grid{}.param+0x{:x}", p.dev, p.grid, p.offset);
        // With the kernel known: `scatter_rows.arg0` (`.arg2+0x8` inside a struct argument),
        // the parameter's type as dtype.
        for (const auto& g : r.gpu->grids)
            if (g.dev == p.dev && g.grid == p.grid && p.ordinal && !g.kernel.empty()) {
                auto base = shortKernelName(demangle(g.kernel), 40);
                if (!oneGrid) base = fmt::format("grid{}.{}", p.grid, base);
                o.name = fmt::format("{}.arg{}", base, *p.ordinal);
                if (p.in_param) o.name += fmt::format("+0x{:x}", p.in_param);
                for (const auto& q : g.params)
                    if (q.ordinal == *p.ordinal && !q.type.empty()) o.dtype = q.type;
            }
        o.ptr = p.value;
        o.end = p.hi;
        for (const auto& q : ps)
            if (q.dev == p.dev && q.lo == p.lo && q.value > p.value && q.value < o.end)
                o.end = q.value;
        o.arg_ptr = p.value;
        o.origin = "cuda_param";
        out.push_back(std::move(o));
    }
    return out;
}

db::Result<CoreIngestSummary> storeCoreReport(Store& store,
                                              const SourceIdentity& id,
                                              const coredump::CoreReport& report,
                                              const CoreProvenance& prov,
                                              bool own_txn) {
    CoreIngestSummary sum;
    sum.path = prov.path.value_or(report.path);
    sum.kind = std::string(coredump::coreKindName(report.layout.kind));
    sum.signature = report.signature.hash;
    sum.seconds = report.seconds;
    if (report.stack) {
        sum.threads = report.stack->threads.size();
        sum.partial = report.stack->partial;
        if (!sum.partial && report.stack->threads_truncated)
            sum.partial = fmt::format("thread limit reached: {} of {} threads unwound",
                                      sum.threads,
                                      report.layout.notes.tids.size());
        if (report.stack->exe_refused) sum.warnings.push_back(*report.stack->exe_refused);
        if (report.stack->exe_unverified) sum.warnings.push_back(*report.stack->exe_unverified);
        for (const auto& w : report.stack->modules_refused) sum.warnings.push_back(w);
        if (const auto* t = coredump::crashingThread(*report.stack)) {
            sum.frames = t->frames.size();
            if (const auto* f = firstSpecific(t->frames)) sum.top = coredump::describeFrame(*f);
        }
    }
    CoreRecord rec = coreRecord(report);
    int64_t when = prov.time.value_or(report.mtime);
    if (prov.time) {
        rec.time = *prov.time;
        rec.time_from = prov.time_from;
    } else if (report.gpu && report.gpu->time) {
        // CUDA's core_%t_%h_%p.nvcudmp: the dump's time, not the copy's.
        when = rec.time = *report.gpu->time;
        rec.time_from = "file name";
    }
    if (prov.path) rec.path = *prov.path;
    if (prov.size) rec.size = *prov.size;
    if (prov.pid) rec.pid = prov.pid;
    if (prov.comm && !rec.process) rec.process = prov.comm;
    if (prov.uid && !rec.uid) rec.uid = prov.uid;
    if (prov.signal && !rec.signal) rec.signal = *prov.signal;
    rec.origin = prov.origin;
    rec.content_fingerprint = prov.content_fingerprint;
    std::optional<std::string> note = prov.note;
    if (report.unwind_error) {  // pid, signal and si_addr from the notes; no frames
        std::string why = *report.unwind_error + " (stored from its notes, no stack)";
        note = note ? *note + "; " + why : why;
        sum.warnings.push_back(why);
    }
    if (const auto& n = report.layout.notes; n.files_stated > n.files.size()) {
        std::string capped = fmt::format(
            "NT_FILE lists {} mappings: the first {} kept", n.files_stated, n.files.size());
        note = note ? *note + "; " + capped : capped;
        sum.warnings.push_back(capped);
    }
    if (report.layout.truncated) {  // cut after its notes: pid, signal, threads still known
        std::string cut = "core file " + *report.layout.truncated + " (stored from its notes" +
                          (report.stack ? ", frames as far as its memory goes)" : ", no stack)");
        note = note ? *note + "; " + cut : cut;
        sum.warnings.push_back(cut);
    }
    if (prov.supersedes) {
        std::string same = fmt::format(
            "the same crash as core {} from {}, which was cut (its bytes a prefix of this "
            "core's): replaced by this one",
            prov.supersedes->id,
            prov.supersedes->path);
        note = note ? *note + "; " + same : same;
        sum.warnings.push_back(same);
    }
    if (prov.takes_over)
        sum.warnings.push_back(replacedCoreWarning(prov.takes_over->id, prov.takes_over->path));
    sum.replaced = prov.supersedes || prov.takes_over || prov.replace;
    rec.note = note;
    rec.exe = prov.exe;
    if (report.gpu && report.gpu->rocr)
        for (const auto& w : report.gpu->rocr->warnings)
            sum.warnings.push_back("ROCr GPU core: " + w);
    if (!prov.meta.empty()) {
        auto m = nlohmann::json::parse(rec.meta.value_or("{}"), nullptr, false);
        if (!m.is_object()) m = nlohmann::json::object();
        m.update(prov.meta);
        rec.meta = m.dump();
    }
    std::optional<Evidence> ev;
    std::vector<Operand> operands;
    if (report.layout.kind == coredump::CoreKind::Cpu) {
        ev = coreEvidence(report, localWall(when));
        ev->time.wall_utc_s = when;
    } else if (report.layout.kind == coredump::CoreKind::CudaGpu) {
        ev = cudaCoreEvidence(report, localWall(when));
        if (ev) ev->time.wall_utc_s = when;
        operands = cudaParamOperands(report);
        sum.operands = operands.size();
    } else if (report.layout.kind == coredump::CoreKind::RocrGpu) {
        ev = rocrCoreEvidence(report, localWall(when));
        if (ev) ev->time.wall_utc_s = when;
    }
    if (ev) {
        if (prov.pid) ev->pid = prov.pid;
        if (prov.comm && !ev->process) ev->process = prov.comm;
        if (note) ev->setAttr("note", *note);
        if (prov.origin != "file") ev->setAttr("origin", prov.origin);
    }

    auto stored = [&]() -> db::Result<int64_t> {
        if (own_txn)
            if (auto r = store.begin(); !r) return std::unexpected(r.error());
        auto s = store.source(id);
        if (!s) return std::unexpected(s.error());
        if (prov.replace)
            if (auto r = store.dropCoreOf(s->id); !r) return std::unexpected(r.error());
        for (const auto& other : {prov.supersedes, prov.takes_over})
            if (other)
                if (auto r = store.dropCoreOf(other->source_id); !r)
                    return std::unexpected(r.error());
        std::optional<int64_t> evidence;
        if (ev) {
            if (auto r = store.addEvidence(s->id, *ev); !r) return std::unexpected(r.error());
            auto e = store.evidenceIdOf(s->id, Kind::Coredump);
            if (!e) return std::unexpected(e.error());
            evidence = *e;
        }
        auto core = store.addCore(s->id, rec, evidence);
        if (!core) return std::unexpected(core.error());
        std::vector<std::string> warnings;
        if (report.stack) {
            for (const auto& w : {report.stack->exe_refused, report.stack->exe_unverified})
                if (w) warnings.push_back(*w);
            for (const auto& w : report.stack->modules_refused) warnings.push_back(w);
        }
        if ((report.layout.truncated || report.unwind_error) && note) warnings.push_back(*note);
        if (report.gpu && report.gpu->rocr)
            for (const auto& w : report.gpu->rocr->warnings)
                warnings.push_back("ROCr GPU core: " + w);
        for (const auto& w : warnings)
            if (auto r = store.addWarning(s->id, Warning{0, w}); !r)
                return std::unexpected(r.error());
        for (const auto& o : operands)
            if (auto r = store.addOperand(s->id, o, std::nullopt); !r)
                return std::unexpected(r.error());
        SourceState done = *s;
        done.offset = rec.size;
        done.complete = true;
        if (auto r = store.setPosition(s->id, done, rec.size); !r)
            return std::unexpected(r.error());
        if (own_txn)
            if (auto r = store.commit(); !r) return std::unexpected(r.error());
        return *core;
    }();
    if (!stored) {
        if (own_txn) (void)store.rollback();
        return std::unexpected(stored.error());
    }
    sum.core_id = *stored;
    return sum;
}

}  // namespace gpufault
