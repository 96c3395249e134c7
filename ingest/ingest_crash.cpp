#include "ingest/ingest_crash.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "collectors/coredump/apport.h"
#include "collectors/coredump/journal_fields.h"
#include "collectors/coredump/signature.h"
#include "ingest/line_reader.h"

namespace gpufault {

namespace {

namespace cd = coredump;

/// The first `n` bytes of the regular file at `path`; "" when it is not one or cannot be read
/// (never blocks on a FIFO: cd::openRegular).
std::string head(const std::string& path, size_t n, bool follow_links = true) {
    std::string h(n, '\0');
    auto fd = cd::openRegular(path, follow_links);
    if (!fd) return "";
    ssize_t got = ::pread(*fd, h.data(), n, 0);
    ::close(*fd);
    h.resize(got > 0 ? static_cast<size_t>(got) : 0);
    return h;
}

/// The first `n` bytes of the open file `fd` (pread: its offset is left alone).
std::string headOf(int fd, size_t n) {
    std::string h(n, '\0');
    ssize_t got = ::pread(fd, h.data(), n, 0);
    h.resize(got > 0 ? static_cast<size_t>(got) : 0);
    return h;
}

/// Closes a descriptor when it goes out of scope.
struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
};

/// A file given as crash input, opened once (cd::openRegular: never blocks on a FIFO, refuses
/// what is not a regular file) and described by fstat of that descriptor: what is read is
/// what was checked, even when the path is replaced meanwhile.
struct OpenedInput {
    int fd = -1;
    struct stat st {};
};
db::Result<OpenedInput> openInput(const std::string& path) {
    auto fd = cd::openRegular(path);
    if (!fd) return std::unexpected(db::Error{fd.error().message});
    OpenedInput o;
    o.fd = *fd;
    if (::fstat(o.fd, &o.st) != 0) {
        auto e = db::Error{fmt::format("{}: {}", path, std::strerror(errno))};
        ::close(o.fd);
        return std::unexpected(e);
    }
    return o;
}

/// "with 1f 8b 08 00": the first bytes of `h`, for errors.
std::string hexHead(std::string_view h) {
    std::string out = "with";
    for (unsigned char c : h.substr(0, 4)) out += fmt::format(" {:02x}", c);
    return out;
}

std::string baseName(const std::string& p) {
    return std::filesystem::path(p).filename().string();
}

constexpr std::string_view kNotRead = "core file not read: ";

/// How far a crash is stored: not at all, from its journal entry only because its core file
/// could not be read then (the file replaces it), or completely.
enum class Stored { No, WithoutFile, Yes };
db::Result<Stored> stored(Store& store, const SourceIdentity& id, bool own_txn) {
    if (own_txn)
        if (auto r = store.begin(); !r) return std::unexpected(r.error());
    auto s = store.source(id);
    std::optional<std::string> note;
    if (s && s->complete) {
        auto n = store.coreNoteOf(s->id);
        if (n) note = *n;
    }
    if (own_txn) (void)store.rollback();
    if (!s) return std::unexpected(s.error());
    if (!s->complete) return Stored::No;
    return note && note->starts_with(kNotRead) ? Stored::WithoutFile : Stored::Yes;
}

SourceIdentity coredumpSource(const std::string& where, const std::string& key) {
    return SourceIdentity{where, "coredump", std::nullopt, std::nullopt, key};
}

std::string entryKey(const cd::CoredumpEntry& e) {
    if (e.timestamp_us && !e.boot_id.empty())
        return cd::coredumpKey(e.boot_id, e.pid, *e.timestamp_us);
    return fmt::format(
        "systemd-coredump:{}:{}:{}:{}", e.hostname, e.pid, e.comm, e.timestamp_us.value_or(0));
}

/// "systemd-coredump", or "systemd-coredump (untrusted)" for an entry journald does not attest
/// (cd::attestedBySystemdCoredump: any user can write such an entry, any file can hold one).
std::string entryOrigin(const cd::CoredumpEntry& e) {
    return e.attested ? "systemd-coredump" : "systemd-coredump (untrusted)";
}

CoreProvenance entryProvenance(const cd::CoredumpEntry& e) {
    CoreProvenance p;
    p.origin = entryOrigin(e);
    if (e.timestamp_us) {
        p.time = static_cast<int64_t>(*e.timestamp_us / 1000000);
        p.time_from = "journal";
    }
    p.pid = e.pid;
    if (!e.comm.empty()) p.comm = e.comm;
    if (!e.exe.empty()) p.exe = e.exe;
    p.signal = e.signal;
    p.uid = e.uid;
    if (e.truncated) p.note = "core truncated by systemd-coredump (ProcessSizeMax)";
    if (!e.boot_id.empty()) p.meta["boot_id"] = e.boot_id;
    if (!e.unit.empty()) p.meta["unit"] = e.unit;
    if (!e.hostname.empty()) p.meta["hostname"] = e.hostname;
    return p;
}

/// Reads the core at `file` (decompressing a zstd one); `name` is the name it was written
/// under. `follow_links` false for a path named by untrusted input (a journal entry): a
/// symbolic link is refused. Anything but a regular file is refused without blocking.
db::Result<cd::CoreReport> readKeptCore(const std::string& file,
                                        const CrashOptions& opt,
                                        bool follow_links = true) {
    if (auto fd = cd::openRegular(file, follow_links); !fd)
        return std::unexpected(db::Error{fd.error().message});
    else
        ::close(*fd);
    auto h = head(file, 64, follow_links);
    auto comp = compressionOf(h);
    if (comp != "zstd" && file.ends_with(".zst"))
        return std::unexpected(db::Error{
            fmt::format("{}: not a zstd frame (the name ends in .zst; the data start {})",
                        file,
                        h.empty() ? std::string("nowhere: the file is empty") : hexHead(h))});
    auto ro = opt.read;
    ro.name = baseName(file);
    if (comp.empty()) {
        auto r = cd::readCore(file, ro);
        if (!r) return std::unexpected(db::Error{r.error().message});
        return std::move(*r);
    }
    if (comp != "zstd")
        return std::unexpected(db::Error{fmt::format(
            "{}: {}-compressed core: not supported (zstd is; decompress it first: {} -d)",
            file,
            comp,
            comp)});
    auto tmp = unzstdToTemp(file, opt.unpack);
    if (!tmp) return std::unexpected(tmp.error());
    auto r = cd::readCore(tmp->path(), ro);
    if (!r) {
        // The message names the temporary copy: name the file instead.
        auto m = r.error().message;
        if (m.starts_with(tmp->path())) m = file + m.substr(tmp->path().size());
        return std::unexpected(db::Error{m});
    }
    return std::move(*r);
}

int64_t fileSize(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

const cd::Frame* firstSpecific(const std::vector<cd::Frame>& frames) {
    for (const auto& f : frames)
        if (!cd::isGenericFrame(f)) return &f;
    return frames.empty() ? nullptr : &frames.front();
}

/// Stores an entry without a readable core: the text stack, the reason.
db::Result<CoreIngestSummary> storeEntryOnly(Store& store,
                                             const SourceIdentity& id,
                                             const cd::CoredumpEntry& e,
                                             const std::optional<std::string>& why,
                                             bool own_txn,
                                             const std::string& origin = "systemd-coredump") {
    CoreRecord rec;
    rec.kind = "cpu";
    rec.path = e.filename.value_or("");
    rec.time = e.timestamp_us ? static_cast<int64_t>(*e.timestamp_us / 1000000) : 0;
    // No time or pid (absent or forged, with a warning): stored as unknown, never as 1970/0.
    rec.time_from = !e.timestamp_us ? "unknown" : origin == "apport" ? "apport Date" : "journal";
    if (e.pid > 0) rec.pid = e.pid;
    if (!e.comm.empty()) rec.process = e.comm;
    rec.uid = e.uid;
    if (e.signal) rec.signal = *e.signal;
    rec.origin = origin;
    rec.note = why ? why : e.not_kept;
    if (!e.exe.empty()) rec.exe = e.exe;
    nlohmann::json meta = entryProvenance(e).meta;
    meta["stack_from"] = !e.stack             ? "none"
                         : origin == "apport" ? "apport Stacktrace"
                                              : "journal MESSAGE";
    rec.meta = meta.dump();
    Evidence ev = coredumpEntryEvidence(e);
    ev.setAttr("origin", origin);
    if (rec.note) ev.setAttr("note", *rec.note);
    CoreIngestSummary sum;
    sum.path = rec.path.empty() ? id.path : rec.path;
    sum.kind = "cpu";
    if (e.stack) {
        rec.threads = e.stack->threads;
        rec.threads_truncated = e.stack->threads_truncated;
        if (const auto* t = cd::crashingThread(*e.stack)) {
            rec.tid = t->tid;
            auto sig = cd::stackSignature(t->frames);
            if (!sig.hash.empty()) {
                rec.signature = sig.hash;
                rec.signature_frames = nlohmann::json(sig.keys).dump();
                sum.signature = sig.hash;
            }
            sum.frames = t->frames.size();
            if (const auto* f = firstSpecific(t->frames)) sum.top = cd::describeFrame(*f);
        }
        sum.threads = e.stack->threads.size();
    }
    if (own_txn)
        if (auto r = store.begin(); !r) return std::unexpected(r.error());
    auto body = [&]() -> db::Result<int64_t> {
        auto s = store.source(id);
        if (!s) return std::unexpected(s.error());
        if (auto r = store.addEvidence(s->id, ev); !r) return std::unexpected(r.error());
        auto evid = store.evidenceIdOf(s->id, Kind::Coredump);
        if (!evid) return std::unexpected(evid.error());
        auto core = store.addCore(s->id, rec, *evid);
        if (!core) return std::unexpected(core.error());
        SourceState done = *s;
        done.complete = true;
        if (auto r = store.setPosition(s->id, done, 0); !r) return std::unexpected(r.error());
        return *core;
    }();
    if (!body) {
        if (own_txn) (void)store.rollback();
        return std::unexpected(body.error());
    }
    if (own_txn)
        if (auto r = store.commit(); !r) return std::unexpected(r.error());
    sum.core_id = *body;
    return sum;
}

}  // namespace

Evidence coredumpEntryEvidence(const cd::CoredumpEntry& e) {
    Evidence ev;
    ev.kind = Kind::Coredump;
    ev.line = 1;
    if (e.timestamp_us) ev.time.wall = localWall(static_cast<int64_t>(*e.timestamp_us / 1000000));
    if (e.pid > 0) ev.pid = e.pid;  // 0: unknown (an apport report without a valid Pid)
    if (!e.comm.empty()) ev.process = e.comm;
    std::string what = e.pid > 0 ? fmt::format("core of {}[{}]", e.comm, e.pid)
                                 : fmt::format("core of {}", e.comm);
    if (e.signal) {
        ev.reason = cd::signalName(*e.signal);
        ev.setAttr("signal", std::to_string(*e.signal));
        what += ": " + *ev.reason;
    }
    ev.setAttr("origin", "systemd-coredump");
    if (e.stack)
        if (const auto* t = cd::crashingThread(*e.stack); t && !t->frames.empty()) {
            ev.tid = t->tid;
            const auto& f0 = t->frames.front();
            if (f0.module) ev.module = baseName(*f0.module);
            ev.module_offset = f0.module_offset;
            auto top = cd::describeFrame(*firstSpecific(t->frames));
            ev.setAttr("frame", top);
            ev.setAttr("threads", std::to_string(e.stack->threads.size()));
            what += "; " + top;
            auto sig = cd::stackSignature(t->frames);
            if (!sig.hash.empty()) ev.setAttr("stack", sig.hash);
        }
    if (e.not_kept) what += "; " + *e.not_kept;
    ev.raw = what;
    return ev;
}

CrashInput crashInputOf(const std::string& path) {
    auto fd = cd::openRegular(path);
    if (!fd) return CrashInput::None;
    auto h = headOf(*fd, 4096);
    ::close(*fd);
    if (h.starts_with("ProblemType: ")) return CrashInput::Apport;
    if (cd::looksLikeJournalExport(h)) return CrashInput::JournalExport;
    if (h.starts_with("{") && h.find("\"__CURSOR\"") != std::string::npos &&
        h.find("\"MESSAGE\"") != std::string::npos)
        return CrashInput::JournalJson;
    auto c = compressionOf(h);
    if (c == "zstd" && isZstdCore(path)) return CrashInput::SystemdCoreFile;
    auto base = baseName(path);
    auto named = cd::parseCoredumpFileName(base);
    if ((named && (c == "lz4" || c == "xz" || c == "zstd")) ||
        (base.starts_with("core.") && base.ends_with(".zst")))
        return CrashInput::SystemdCoreFile;  // named like one: an error says what is wrong
    return CrashInput::None;
}

db::Result<CoreIngestSummary> ingestCoredumpEntry(Store& store,
                                                  const cd::CoredumpEntry& e,
                                                  const std::string& where,
                                                  const CrashOptions& opt,
                                                  bool own_txn,
                                                  const JournalCore* journal_core) {
    auto id = coredumpSource(where, entryKey(e));
    auto done = stored(store, id, own_txn);
    if (!done) return std::unexpected(done.error());
    if (*done != Stored::No) {
        CoreIngestSummary s;
        s.path = where;
        s.unchanged = true;
        return s;
    }
    std::optional<std::string> why;
    if (e.filename) {
        auto report = readKeptCore(*e.filename, opt, false);
        if (report) {
            auto prov = entryProvenance(e);
            prov.path = *e.filename;
            prov.size = fileSize(*e.filename);
            return storeCoreReport(store, id, *report, prov, own_txn);
        }
        why = std::string(kNotRead) + report.error().message;
    }
    if (e.in_journal && journal_core && !why) {
        // Storage=journal: the core is the entry's COREDUMP= field, copied out by the caller.
        if (!journal_core->file) {
            why = "core in the journal not read: " + journal_core->error;
        } else {
            auto ro = opt.read;
            ro.name = "COREDUMP";
            auto report = cd::readCore(journal_core->file->path(), ro);
            if (report) {
                auto prov = entryProvenance(e);
                prov.path = where + " (COREDUMP=)";
                prov.size = static_cast<int64_t>(journal_core->file->size());
                prov.meta["storage"] = "journal";
                return storeCoreReport(store, id, *report, prov, own_txn);
            }
            why = "core in the journal not read: " + report.error().message;
        }
    }
    return storeEntryOnly(store, id, e, why, own_txn, entryOrigin(e));
}

db::Result<JournalCoresSummary> ingestJournalCores(Store& store,
                                                   const std::string& path,
                                                   CrashInput kind,
                                                   const CrashOptions& opt) {
    JournalCoresSummary sum;
    sum.path = path;
    std::optional<db::Error> failed;
    auto where = [&](uint64_t entry, uint64_t offset) {
        return kind == CrashInput::JournalJson
                   ? fmt::format("{}: entry {}", path, entry)
                   : fmt::format("{}: entry {} (byte offset {})", path, entry, offset);
    };
    // The COREDUMP= core of the entry being read: written out as it arrives.
    std::optional<TempFile> spilled;
    std::string spillError;
    auto spill = [&](std::string_view chunk, uint64_t size, bool first) {
        if (first) {
            spilled.reset();
            spillError.clear();
            if (size > opt.unpack.max_bytes) {
                spillError = fmt::format(
                    "{} bytes: over the {}-byte cap (max_unpacked)", size, opt.unpack.max_bytes);
                return;
            }
            auto t = TempFile::create(opt.unpack, "journal");
            if (!t)
                spillError = t.error().message;
            else
                spilled.emplace(std::move(*t));
            return;
        }
        if (!spilled || !spillError.empty()) return;
        if (auto r = spilled->write(chunk); !r) spillError = r.error().message;
    };
    auto onEntry = [&](cd::FieldMap&& f, uint64_t offset) {
        ++sum.entries;
        JournalCore jc;  // this entry's COREDUMP= core, if it had one
        if (spilled && spillError.empty()) jc.file.emplace(std::move(*spilled));
        jc.error = spillError.empty() && !jc.file ? "no COREDUMP= data" : spillError;
        if (kind == CrashInput::JournalJson)  // it writes null for a field over 4096 bytes
            jc.error = "journalctl -o json leaves the core out: export with -o export";
        spilled.reset();
        spillError.clear();
        if (failed) return;
        auto it = f.find("MESSAGE_ID");
        if (it == f.end() || it->second != cd::kCoredumpMessageId) return;
        auto at = where(sum.entries, offset);
        auto e = cd::parseCoredumpEntry(f);
        if (!e) {  // no or no valid COREDUMP_PID: not a crash this can store
            sum.warnings.push_back(fmt::format("{}: {}", at, e.error().message));
            return;
        }
        for (const auto& w : e->warnings) sum.warnings.push_back(fmt::format("{}: {}", at, w));
        if (!e->attested) {
            auto field = [&](const char* n) {
                auto v = f.find(n);
                return v == f.end() ? std::string("(none)") : fmt::format("{:.40}", v->second);
            };
            sum.warnings.push_back(fmt::format(
                "{}: not attested as systemd-coredump's (_UID={}, _COMM={}, SYSLOG_IDENTIFIER={}; "
                "gpufaultd ignores such entries): stored with origin '{}'",
                at,
                field("_UID"),
                field("_COMM"),
                field("SYSLOG_IDENTIFIER"),
                entryOrigin(*e)));
        }
        auto r = ingestCoredumpEntry(store, *e, path, opt, true, &jc);
        if (!r)
            failed = r.error();
        else
            sum.cores.push_back(std::move(*r));
    };
    auto in = openInput(path);
    if (!in) return std::unexpected(in.error());
    FdCloser closer{in->fd};
    if (kind == CrashInput::JournalJson) {
        constexpr size_t kMaxJsonLine = 64u << 20;
        LineReader lines(in->fd, kMaxJsonLine);
        for (;;) {
            uint64_t offset = 0;
            bool cut = false;
            auto l = lines.next(offset, cut);
            if (!l)
                return std::unexpected(db::Error{fmt::format("{}: {}", path, l.error().message)});
            if (!*l || failed) break;
            if (cut) {
                sum.warnings.push_back(fmt::format(
                    "{}: the line at byte offset {} is longer than 64 MiB: not read as a journal "
                    "entry",
                    path,
                    offset));
                continue;
            }
            if ((*l)->empty()) continue;
            // A line that is not an object is left to the text ingest that reads the file next.
            if (auto f = cd::parseJournalJsonLine(**l)) onEntry(std::move(*f), offset);
        }
    } else {
        auto onLeftOut = [&](const cd::LeftOutField& lf) {
            // Delivered before its entry: the entry's number is the next one.
            sum.warnings.push_back(fmt::format(
                "{}: field {} at byte offset {} holds {} bytes, over the {} MiB cap: left out "
                "(the entry is read without it)",
                where(sum.entries + 1, lf.entry_offset),
                lf.name.substr(0, 64),
                lf.offset,
                lf.size,
                cd::kMaxJournalFieldBytes >> 20));
        };
        cd::JournalExportReader reader(onEntry, cd::kMaxJournalFieldBytes, onLeftOut);
        reader.spill("COREDUMP", spill);
        std::string buf(1 << 20, '\0');
        while (!failed) {
            ssize_t got = ::read(in->fd, buf.data(), buf.size());
            if (got < 0 && errno == EINTR) continue;
            if (got < 0)
                return std::unexpected(
                    db::Error{fmt::format("{}: {}", path, std::strerror(errno))});
            if (got == 0) break;
            if (auto r = reader.feed(std::string_view(buf.data(), static_cast<size_t>(got))); !r)
                return std::unexpected(db::Error{fmt::format("{}: {}", path, r.error().message)});
        }
        if (!failed)
            if (auto r = reader.finish(); !r)
                return std::unexpected(db::Error{fmt::format("{}: {}", path, r.error().message)});
    }
    if (failed) return std::unexpected(*failed);
    return sum;
}

db::Result<CoreIngestSummary> ingestSystemdCoreFile(Store& store,
                                                    const std::string& path,
                                                    const CrashOptions& opt,
                                                    bool own_txn) {
    auto name = cd::parseCoredumpFileName(baseName(path));
    SourceIdentity id;
    if (name) {
        id = coredumpSource(path, cd::coredumpKey(name->boot_id, name->pid, name->timestamp_us));
    } else {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0)
            return std::unexpected(db::Error{fmt::format("{}: {}", path, std::strerror(errno))});
        auto h = head(path, 4096);
        uint64_t fnv = 1469598103934665603ull;
        for (unsigned char c : h) fnv = (fnv ^ c) * 1099511628211ull;
        id = SourceIdentity{path,
                            "core",
                            static_cast<int64_t>(st.st_dev),
                            static_cast<int64_t>(st.st_ino),
                            fmt::format("core-{:016x}-{}", fnv, st.st_size)};
    }
    auto done = stored(store, id, own_txn);
    if (!done) return std::unexpected(done.error());
    if (*done == Stored::Yes) {
        CoreIngestSummary s;
        s.path = path;
        s.unchanged = true;
        return s;
    }
    auto report = readKeptCore(path, opt);
    if (!report) return std::unexpected(report.error());
    CoreProvenance prov;
    prov.replace = *done == Stored::WithoutFile;  // the entry's text stack gives way to the core
    prov.path = path;
    prov.size = fileSize(path);
    if (name) {
        prov.origin = "systemd-coredump";
        prov.time = static_cast<int64_t>(name->timestamp_us / 1000000);
        prov.time_from = "file name";
        prov.pid = name->pid;
        prov.comm = name->comm;
        prov.uid = name->uid;
        prov.meta["boot_id"] = name->boot_id;
    }
    return storeCoreReport(store, id, *report, prov, own_txn);
}

db::Result<CoreIngestSummary> ingestApportReport(Store& store,
                                                 const std::string& path,
                                                 const CrashOptions& opt,
                                                 bool own_txn) {
    auto fail = [&](const std::string& m) {
        return std::unexpected(db::Error{fmt::format("{}: {}", path, m)});
    };
    auto in = openInput(path);
    if (!in) return std::unexpected(in.error());
    FdCloser closer{in->fd};
    const struct stat& st = in->st;
    auto h = headOf(in->fd, 4096);
    uint64_t fnv = 1469598103934665603ull;
    for (unsigned char c : h) fnv = (fnv ^ c) * 1099511628211ull;
    SourceIdentity id{path,
                      "core",
                      static_cast<int64_t>(st.st_dev),
                      static_cast<int64_t>(st.st_ino),
                      fmt::format("apport-{:016x}-{}", fnv, st.st_size)};
    auto done = stored(store, id, own_txn);
    if (!done) return std::unexpected(done.error());
    if (*done != Stored::No) {
        CoreIngestSummary s;
        s.path = path;
        s.unchanged = true;
        return s;
    }
    auto inflater = InflateToTemp::create(opt.unpack);
    if (!inflater) return std::unexpected(inflater.error());
    bool core = false;
    uint64_t n = 0, coreFirst = 0, coreLast = 0;  // lines of the CoreDump chunks
    cd::ApportReader reader([&](std::string_view b) -> cd::Result<void> {
        core = true;
        if (!coreFirst) coreFirst = n;
        coreLast = n;
        if (auto r = inflater->feed(b); !r) return std::unexpected(cd::Error{r.error().message});
        return {};
    });
    // apport's lines are short (base64 chunks, /proc text); one longer than this is not apport's.
    constexpr size_t kMaxApportLine = 64u << 20;
    LineReader lines(in->fd, kMaxApportLine);
    for (;;) {
        uint64_t offset = 0;
        bool cut = false;
        auto l = lines.next(offset, cut);
        if (!l) return fail(l.error().message);
        if (!*l) break;
        ++n;
        if (cut) return fail(fmt::format("line {}: longer than 64 MiB", n));
        if (auto r = reader.line(**l, n); !r) return fail(r.error().message);
    }
    if (n == 0) return fail("empty report");
    const auto& rep = reader.report();
    CoreProvenance prov;
    prov.origin = "apport";
    prov.path = path;
    prov.size = static_cast<int64_t>(st.st_size);
    prov.pid = rep.pid();
    prov.signal = rep.signal();
    if (!rep.executable().empty()) {
        prov.exe = rep.executable();
        prov.comm = baseName(*prov.exe).substr(0, 15);
    }
    if (auto w = rep.wall()) {
        struct tm tm {};
        if (strptime(w->c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) {
            tm.tm_isdst = -1;
            prov.time = static_cast<int64_t>(std::mktime(&tm));
            prov.time_from = "apport Date";
        }
    }
    if (auto it = rep.fields.find("ProblemType"); it != rep.fields.end())
        prov.meta["problem_type"] = it->second;
    auto warned = [&](db::Result<CoreIngestSummary> r) {
        if (r) r->warnings = rep.warnings();
        return r;
    };
    if (!core) {
        // apport left the core out (size, or a report of a non-crash problem).
        cd::CoredumpEntry e;
        e.pid = prov.pid.value_or(0);
        e.comm = prov.comm.value_or("");
        e.exe = prov.exe.value_or("");
        e.signal = prov.signal;
        if (prov.time) e.timestamp_us = static_cast<uint64_t>(*prov.time) * 1000000;
        e.stack = rep.stack();
        return warned(
            storeEntryOnly(store, id, e, "no CoreDump in the apport report", own_txn, "apport"));
    }
    auto tmp = inflater->finish();
    if (!tmp)  // a cut report: name where the CoreDump data stop
        return fail(fmt::format("line {}: {}; CoreDump is lines {}-{} of {}",
                                coreLast,
                                tmp.error().message,
                                coreFirst,
                                coreLast,
                                n));
    auto ro = opt.read;
    ro.name = "core";
    auto report = cd::readCore(tmp->path(), ro);
    if (!report) {
        auto m = report.error().message;
        if (m.starts_with(tmp->path() + ": ")) m = m.substr(tmp->path().size() + 2);
        return fail("CoreDump: " + m);
    }
    return warned(storeCoreReport(store, id, *report, prov, own_txn));
}

}  // namespace gpufault
