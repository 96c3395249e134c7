#include "ingest/ingest_core.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

namespace gpufault {

namespace {

std::string localWall(int64_t t) {
    time_t tt = static_cast<time_t>(t);
    struct tm tm {};
    localtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return buf;
}

/// FNV-1a of the first 4 KiB (the notes: pid, registers) and the size.
std::string coreFingerprint(std::string_view head, uint64_t size) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : head) h = (h ^ c) * 1099511628211ull;
    return fmt::format("core-{:016x}-{}", h, size);
}

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
    if (!n.tids.empty()) e.tid = n.tids.front();
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
            e.address = n.siginfo->addr;
            e.address_exact = true;
            what += fmt::format(" at 0x{:x}", *n.siginfo->addr);
        }
    }
    if (r.stack) {
        e.setAttr("threads", std::to_string(r.stack->threads.size()));
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
    if (!n.tids.empty()) c.tid = n.tids.front();
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

db::Result<CoreIngestSummary> ingestCore(Store& store,
                                         const std::string& path,
                                         const coredump::ReadOptions& opt) {
    auto fail = [&](const std::string& m) { return std::unexpected(db::Error{path + ": " + m}); };
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(std::strerror(errno));
    struct stat st {};
    std::string head(4096, '\0');
    ssize_t got = ::fstat(fd, &st) == 0 ? ::pread(fd, head.data(), head.size(), 0) : -1;
    ::close(fd);
    if (got < 0) return fail(std::strerror(errno));
    head.resize(static_cast<size_t>(got));

    SourceIdentity id{path,
                      "core",
                      static_cast<int64_t>(st.st_dev),
                      static_cast<int64_t>(st.st_ino),
                      coreFingerprint(head, static_cast<uint64_t>(st.st_size))};
    CoreIngestSummary sum;
    sum.path = path;
    if (auto r = store.begin(); !r) return std::unexpected(r.error());
    auto src = store.source(id);
    if (src && src->complete) {
        auto rb = store.rollback();
        sum.unchanged = true;
        return sum;
    }
    if (auto rb = store.rollback(); !rb) return std::unexpected(rb.error());
    if (!src) return std::unexpected(src.error());

    auto report = coredump::readCore(path, opt);
    if (!report) return std::unexpected(db::Error{report.error().message});
    sum.kind = std::string(coredump::coreKindName(report->layout.kind));
    sum.signature = report->signature.hash;
    sum.seconds = report->seconds;
    if (report->stack) {
        sum.threads = report->stack->threads.size();
        if (const auto* t = coredump::crashingThread(*report->stack)) {
            sum.frames = t->frames.size();
            if (const auto* f = firstSpecific(t->frames)) sum.top = coredump::describeFrame(*f);
        }
    }

    auto stored = [&]() -> db::Result<int64_t> {
        if (auto r = store.begin(); !r) return std::unexpected(r.error());
        auto s = store.source(id);
        if (!s) return std::unexpected(s.error());
        std::optional<int64_t> evidence;
        if (report->layout.kind == coredump::CoreKind::Cpu) {
            if (auto r = store.addEvidence(s->id, coreEvidence(*report, localWall(report->mtime)));
                !r)
                return std::unexpected(r.error());
            auto ev = store.evidenceIdOf(s->id, Kind::Coredump);
            if (!ev) return std::unexpected(ev.error());
            evidence = *ev;
        }
        auto core = store.addCore(s->id, coreRecord(*report), evidence);
        if (!core) return std::unexpected(core.error());
        SourceState done = *s;
        done.offset = static_cast<int64_t>(report->size);
        done.complete = true;
        if (auto r = store.setPosition(s->id, done, static_cast<int64_t>(report->size)); !r)
            return std::unexpected(r.error());
        if (auto r = store.commit(); !r) return std::unexpected(r.error());
        return *core;
    }();
    if (!stored) {
        (void)store.rollback();
        return fail(stored.error().message);
    }
    sum.core_id = *stored;
    return sum;
}

}  // namespace gpufault
