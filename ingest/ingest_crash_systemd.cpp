// Crash-report ingest of systemd-coredump: one journal entry (ingestCoredumpEntry, with its core
// file or its `COREDUMP=` core), a file of journal entries (ingestJournalCores: `journalctl -o
// export` / `-o json`) and a core file it wrote (ingestSystemdCoreFile:
// `core.COMM.UID.BOOTID.PID.USEC.zst`). Shared helpers: ingest_crash_parts.h.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "collectors/coredump/journal_fields.h"
#include "collectors/coredump/signature.h"
#include "ingest/ingest_crash.h"
#include "ingest/ingest_crash_parts.h"
#include "ingest/line_reader.h"
#include "schema/core_queries.h"

namespace gpufault {

namespace cd = coredump;
using crash::baseName;
using crash::entryOrigin;
using crash::entryProvenance;
using crash::FdCloser;
using crash::head;
using crash::kNotRead;
using crash::openInput;
using crash::stored;
using crash::Stored;
using crash::storeEntryOnly;

namespace {

/// "with 1f 8b 08 00": the first bytes of `h`, for errors.
std::string hexHead(std::string_view h) {
    std::string out = "with";
    for (unsigned char c : h.substr(0, 4)) out += fmt::format(" {:02x}", c);
    return out;
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

/// A core file made readable: the file itself, or its zstd content in a temporary file.
struct KeptCore {
    std::optional<TempFile> tmp;  ///< the decompressed content of a zstd file
    std::string path;             ///< what readCore() reads: `tmp`'s path, or the file
    std::string fingerprint;      ///< fileCoreFingerprint() of the uncompressed content
    /// Set when the decompressed core passed the cap and only what fits was kept, or when the
    /// zstd data end in mid-frame (a cut file): says so, naming the cap or the compressed offset
    /// (a note of the core and a warning).
    std::optional<std::string> cut;
    /// Set when the zstd data go on past the end the core's headers state (a bomb behind a
    /// small core): that end, and that the rest was not decompressed.
    std::optional<std::string> past_end;
    /// What the core's note and the ingest's warnings say about it: cut, past_end, or both.
    std::optional<std::string> notice() const {
        if (cut && past_end) return *cut + "; " + *past_end;
        return cut ? cut : past_end;
    }
};

/// Opens the core at `file` (decompressing a zstd one) and fingerprints its content; `name` is
/// the name it was written under. `follow_links` false for a path named by untrusted input (a
/// journal entry): a symbolic link is refused. Anything but a regular file is refused without
/// blocking.
db::Result<KeptCore> openKeptCore(const std::string& file,
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
    KeptCore k;
    if (!comp.empty() && comp != "zstd")
        return std::unexpected(db::Error{fmt::format(
            "{}: {}-compressed core: not supported (zstd is; decompress it first: {} -d)",
            file,
            comp,
            comp)});
    if (comp.empty()) {
        k.path = file;
    } else {
        auto tmp = unzstdToTemp(file, opt.unpack);
        if (!tmp) return std::unexpected(tmp.error());
        if (tmp->size() == 0)  // nothing decompressed: no core to read, cut or not
            return std::unexpected(db::Error{
                tmp->endedAt()
                    ? fmt::format("{}: zstd: the data end in mid-frame at compressed offset {} "
                                  "(cut file) before any data decompressed",
                                  file,
                                  *tmp->endedAt())
                    : fmt::format("{}: not a zstd frame with data (skippable frames only: "
                                  "nothing to decompress)",
                                  file)});
        k.tmp.emplace(std::move(*tmp));
        k.path = k.tmp->path();
        if (k.tmp->pastEnd())
            k.past_end = fmt::format(
                "zstd data go on past the core's end (byte {}, as its ELF headers state): not "
                "decompressed",
                k.tmp->size());
        if (k.tmp->cut())
            k.cut = fmt::format(
                "core larger than the cap of {} MiB once decompressed (--max-unpacked-mib, "
                "cores.max_unpacked_mib): its first {} MiB kept",
                k.tmp->cap() >> 20,
                k.tmp->cap() >> 20);
        else if (auto at = k.tmp->endedAt())
            // A cut file: what decompressed is read like a raw core cut there (stored from its
            // notes when they are whole).
            k.cut = fmt::format(
                "zstd: the data end in mid-frame at compressed offset {} (cut file): the {} "
                "bytes decompressed before it kept",
                *at,
                k.tmp->size());
    }
    auto fp = fileCoreFingerprint(k.path);
    if (!fp) return std::unexpected(fp.error());
    k.fingerprint = std::move(*fp);
    return k;
}

/// Reads the core `k` opened from `file`.
db::Result<cd::CoreReport> readOpenedCore(const KeptCore& k,
                                          const std::string& file,
                                          const CrashOptions& opt) {
    auto ro = opt.read;
    ro.name = baseName(file);
    // A decompressed copy is our temporary file, read through /proc/self/fd/N (a link); the
    // file itself was opened as openKeptCore() was told.
    if (k.tmp) ro.follow_links = true;
    auto r = cd::readCore(k.path, ro);
    if (!r) {
        // The message names the temporary copy: name the file instead.
        auto m = r.error().message;
        if (k.tmp && m.starts_with(k.path)) m = file + m.substr(k.path.size());
        if (k.cut) m += " (" + *k.cut + ")";
        return std::unexpected(db::Error{m});
    }
    return std::move(*r);
}

/// Before a journal entry's core (read at `path`, content `fingerprint`) is stored, as the
/// kept-file path checks (hostile review 148, HIGH 2): the core of the same content stored from
/// another file (the raw core, apport's report of it) is taken over (`prov.takes_over`: one
/// core, with the entry's metadata, whichever came first); of the same crash, one cut, the
/// shorter stored one gives way (`prov.supersedes`). A summary ("core N from PATH, of which …")
/// when the stored core is the more complete one: nothing to store.
db::Result<std::optional<CoreIngestSummary>> joinStoredCore(Store& store,
                                                            const std::string& path,
                                                            const std::string& fingerprint,
                                                            const std::string& where,
                                                            CoreProvenance& prov) {
    using Joined = std::optional<CoreIngestSummary>;
    auto same = sameStoredCore(store.db(), path, fingerprint);
    if (!same) return std::unexpected(same.error());
    if (*same) {
        auto rows = queryCores(store.db(), (*same)->first);
        if (!rows) return std::unexpected(rows.error());
        if (rows->empty()) return Joined{};
        const CoreRecord& old = rows->front().core;
        // An entry journald does not attest (an export file anyone could write) never takes
        // over a core from elsewhere: its pid, time and executable are only its word (hostile
        // review 151, MED 1: COREDUMP_PID=1 replaced the core's pid).
        if (prov.origin.ends_with("(untrusted)") && !old.origin.ends_with("(untrusted)")) {
            CoreIngestSummary s;
            s.path = where;
            s.unchanged = true;
            s.same_as = fmt::format(
                "core {} from {} (this entry is not attested by journald: the stored core is "
                "kept as it is)",
                (*same)->first,
                (*same)->second);
            return Joined{std::move(s)};
        }
        auto source = queryCoreSource(store.db(), (*same)->first);
        if (!source) return std::unexpected(source.error());
        if (*source) prov.takes_over = PrefixCore{(*same)->first, **source, (*same)->second, false};
        return Joined{};
    }
    auto p = prefixStoredCore(store.db(), path, fingerprint);
    if (!p) return std::unexpected(p.error());
    if (*p && (*p)->stored_longer) {
        CoreIngestSummary s;
        s.path = where;
        s.unchanged = true;
        s.same_as = fmt::format(
            "core {} from {}, of which this cut core is a prefix", (*p)->id, (*p)->path);
        return Joined{std::move(s)};
    }
    prov.supersedes = *p;
    return Joined{};
}

/// The stack of core `core` (stored, of the same content as `report`'s) in place of the one
/// just unwound: it was unwound with the options of its own ingest (`--exe`, `--debuginfo-path`),
/// which this reading may not have (hostile review 151, MED 1: a journal entry taking over a
/// core read with them left `n/a (libcrashlib.so + 0x116e)` frames). The signature follows.
db::Result<void> keepStoredStack(Store& store,
                                 int64_t core,
                                 cd::CoreReport& report,
                                 const CrashOptions& opt) {
    if (!report.stack) return {};
    auto threads = queryCoreThreads(store.db(), core, true);
    if (!threads) return std::unexpected(threads.error());
    if (threads->empty()) return {};
    auto rows = queryCores(store.db(), core);
    if (!rows) return std::unexpected(rows.error());
    report.stack->threads = std::move(*threads);
    if (!rows->empty()) {
        auto missing = nlohmann::json::parse(rows->front().core.modules_missing, nullptr, false);
        report.stack->modules_without_file.clear();
        if (missing.is_array())
            for (const auto& m : missing)
                if (m.is_string())
                    report.stack->modules_without_file.push_back(m.get<std::string>());
        report.stack->threads_truncated = rows->front().core.threads_truncated;
    }
    for (const auto& t : report.stack->threads)
        if (t.crashed) {
            report.signature = cd::stackSignature(t.frames, opt.read.signature_depth);
            break;
        }
    return {};
}

/// `r` with the warning `cut` (KeptCore::cut) first, when set.
db::Result<CoreIngestSummary> withCut(db::Result<CoreIngestSummary> r,
                                      const std::optional<std::string>& cut) {
    if (r && cut) r->warnings.insert(r->warnings.begin(), *cut);
    return r;
}

int64_t fileSize(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

}  // namespace

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
        auto kept = openKeptCore(*e.filename, opt, false);
        auto prov = entryProvenance(e);
        std::optional<CoreIngestSummary> joined;
        if (kept) {
            auto j = joinStoredCore(store, kept->path, kept->fingerprint, *e.filename, prov);
            if (!j) return std::unexpected(j.error());
            joined = std::move(*j);
        }
        if (joined) return std::move(*joined);
        auto report = kept ? readOpenedCore(*kept, *e.filename, opt)
                           : db::Result<cd::CoreReport>(std::unexpected(kept.error()));
        if (report && prov.takes_over)
            if (auto k = keepStoredStack(store, prov.takes_over->id, *report, opt); !k)
                return std::unexpected(k.error());
        if (report) {
            prov.content_fingerprint = kept->fingerprint;
            prov.path = *e.filename;
            prov.size = fileSize(*e.filename);
            if (auto n = kept->notice()) prov.note = prov.note ? *prov.note + "; " + *n : *n;
            auto r = withCut(storeCoreReport(store, id, *report, prov, own_txn), kept->notice());
            // The entry's pid replaces the one the stored core showed: say so when they differ.
            if (r && prov.takes_over && report->layout.notes.pid &&
                *report->layout.notes.pid != e.pid)
                r->warnings.push_back(fmt::format(
                    "the entry's COREDUMP_PID {} is not the pid {} the core's notes name (a "
                    "process in a PID namespace, or an entry that is wrong): the entry's is "
                    "stored",
                    e.pid,
                    *report->layout.notes.pid));
            return r;
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
            ro.follow_links = true;  // our temporary file, read through /proc/self/fd/N
            auto prov = entryProvenance(e);
            if (auto fp = fileCoreFingerprint(journal_core->file->path())) {
                prov.content_fingerprint = std::move(*fp);
                auto j = joinStoredCore(
                    store, journal_core->file->path(), *prov.content_fingerprint, where, prov);
                if (!j) return std::unexpected(j.error());
                if (*j) return std::move(**j);
            }
            auto report = cd::readCore(journal_core->file->path(), ro);
            if (report && prov.takes_over)
                if (auto k = keepStoredStack(store, prov.takes_over->id, *report, opt); !k)
                    return std::unexpected(k.error());
            if (report) {
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
    bool finishing = false;  // set while reader.finish() delivers an unended last entry
    std::optional<cd::JournalExportReader::CutField> cutBinary;  // where finish() found it cut
    auto onEntry = [&](cd::FieldMap&& f, uint64_t offset) {
        ++sum.entries;
        JournalCore jc;  // this entry's COREDUMP= core, if it had one
        if (finishing && cutBinary && cutBinary->name == "COREDUMP") {
            spilled.reset();  // its first bytes only: not read as the core
            spillError = "the export ends inside it (" + cutBinary->what + ")";
        }
        if (spilled && spillError.empty()) jc.file.emplace(std::move(*spilled));
        jc.error = spillError.empty() && !jc.file ? "no COREDUMP= data" : spillError;
        if (kind == CrashInput::JournalJson)  // it writes null for a field over 4096 bytes
            jc.error = "journalctl -o json leaves the core out: export with -o export";
        spilled.reset();
        spillError.clear();
        if (failed) return;
        auto it = f.find("MESSAGE_ID");
        if (it == f.end() && finishing && cutBinary) {
            // Cut inside a binary field before its MESSAGE_ID (a COREDUMP= core early in the
            // entry): whether it was a crash cannot be told; said, not dropped in silence.
            sum.warnings.push_back(fmt::format("{}: the export ends inside this entry ({}) "
                                               "before its MESSAGE_ID: not read",
                                               where(sum.entries, offset),
                                               cutBinary->what));
            return;
        }
        if (it == f.end() || it->second != cd::kCoredumpMessageId) return;
        auto at = where(sum.entries, offset);
        auto e = cd::parseCoredumpEntry(f);
        if (!e) {  // no or no valid COREDUMP_PID: not a crash this can store
            sum.warnings.push_back(fmt::format("{}: {}", at, e.error().message));
            return;
        }
        for (const auto& w : e->warnings) sum.warnings.push_back(fmt::format("{}: {}", at, w));
        if (finishing) {
            // Delivered by finish(): the export ends inside it (export ends every entry with a
            // blank line). Fields after the cut are missing: without COREDUMP_FILENAME it is not
            // known whether a core was kept, so no size limit is claimed.
            sum.warnings.push_back(
                cutBinary ? fmt::format("{}: the export ends inside this entry ({}): that field "
                                        "and those after it are missing",
                                        at,
                                        cutBinary->what)
                          : fmt::format("{}: the export ends inside this entry (no blank line "
                                        "after it): fields after the cut are missing",
                                        at));
            if (!e->filename && !e->in_journal)
                e->not_kept = "not known whether a core was kept: the export ends inside the entry";
        }
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
        finishing = true;
        cutBinary = reader.cutInsideBinary();
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
        id = SourceIdentity{path,
                            "core",
                            static_cast<int64_t>(st.st_dev),
                            static_cast<int64_t>(st.st_ino),
                            coreSourceFingerprint(head(path, 4096),
                                                  static_cast<uint64_t>(st.st_size),
                                                  int64_t{st.st_mtim.tv_sec} * 1000000000 +
                                                      st.st_mtim.tv_nsec)};
    }
    auto done = stored(store, id, own_txn, opt.unpack.max_bytes);
    if (!done) return std::unexpected(done.error());
    if (*done == Stored::Yes) {
        CoreIngestSummary s;
        s.path = path;
        s.unchanged = true;
        return s;
    }
    auto kept = openKeptCore(path, opt, opt.read.follow_links);
    if (!kept) return std::unexpected(kept.error());
    if (*done == Stored::No) {
        // The same core already stored from another file (the uncompressed core, another
        // copy): stored once.
        auto same = sameStoredCore(store.db(), kept->path, kept->fingerprint);
        if (!same) return std::unexpected(same.error());
        if (*same) {
            CoreIngestSummary s;
            s.path = path;
            s.unchanged = true;
            s.same_as = fmt::format("core {} from {}", (*same)->first, (*same)->second);
            return s;
        }
    }
    // The same crash, one of the two cut (this `.zst` and its raw core): one core, the more
    // complete one's.
    std::optional<PrefixCore> prefix;
    if (*done == Stored::No) {
        auto p = prefixStoredCore(store.db(), kept->path, kept->fingerprint);
        if (!p) return std::unexpected(p.error());
        if (*p && (*p)->stored_longer) {
            CoreIngestSummary s;
            s.path = path;
            s.unchanged = true;
            s.same_as = fmt::format(
                "core {} from {}, of which this cut core is a prefix", (*p)->id, (*p)->path);
            return s;
        }
        prefix = *p;
    }
    auto report = readOpenedCore(*kept, path, opt);
    if (!report) return std::unexpected(report.error());
    CoreProvenance prov;
    prov.supersedes = prefix;
    prov.content_fingerprint = kept->fingerprint;
    prov.note = kept->notice();
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
    return withCut(storeCoreReport(store, id, *report, prov, own_txn), kept->notice());
}

}  // namespace gpufault
