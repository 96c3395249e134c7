// Crash-report ingest of apport's `.crash` reports (ingestApportReport): the report read line by
// line (collectors/coredump/apport.h), its base64 CoreDump inflated into a capped temporary file
// and unwound; a report without CoreDump is stored from its fields. Shared helpers:
// ingest_crash_parts.h.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <ctime>

#include "collectors/coredump/apport.h"
#include "ingest/core_fingerprint.h"
#include "ingest/ingest_crash.h"
#include "ingest/ingest_crash_parts.h"
#include "ingest/line_reader.h"
#include "schema/core_queries.h"

namespace gpufault {

namespace cd = coredump;
using crash::baseName;
using crash::FdCloser;
using crash::headOf;
using crash::openInput;
using crash::stored;
using crash::Stored;
using crash::storeEntryOnly;

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
    // The same crash stored from a report read before its CoreDump was written (apport still
    // writing it, hostile review 148, HIGH 3), or whole: known by its executable, Date and pid.
    std::vector<ApportCandidate> crash;
    if (prov.exe && prov.time) {
        auto c = queryApportCoresOfCrash(store.db(), *prov.exe, *prov.time, prov.pid);
        if (!c) return std::unexpected(c.error());
        crash = std::move(*c);
    }
    auto entryOnly = std::find_if(
        crash.begin(), crash.end(), [](const ApportCandidate& c) { return c.entry_only; });
    if (!core) {
        // apport left the core out (size, or a report of a non-crash problem). One with its
        // CoreDump already stored is the more complete one.
        for (const auto& c : crash)
            if (!c.entry_only) {
                CoreIngestSummary s;
                s.path = path;
                s.unchanged = true;
                s.same_as = fmt::format(
                    "core {} from {} (the same crash, with its CoreDump)", c.id, c.path);
                return warned(std::move(s));
            }
        cd::CoredumpEntry e;
        e.pid = prov.pid.value_or(0);
        e.comm = prov.comm.value_or("");
        e.exe = prov.exe.value_or("");
        e.signal = prov.signal;
        if (prov.time) e.timestamp_us = static_cast<uint64_t>(*prov.time) * 1000000;
        e.stack = rep.stack();
        std::optional<int64_t> replaces;
        if (entryOnly != crash.end()) replaces = entryOnly->source_id;
        auto r = warned(storeEntryOnly(
            store, id, e, "no CoreDump in the apport report", own_txn, "apport", replaces));
        if (r && replaces)
            r->warnings.push_back(replacedCoreWarning(entryOnly->id, entryOnly->path));
        return r;
    }
    auto tmp = inflater->finish();
    if (!tmp)  // a cut report: name where the CoreDump data stop
        return fail(fmt::format("line {}: {}; CoreDump is lines {}-{} of {}",
                                coreLast,
                                tmp.error().message,
                                coreFirst,
                                coreLast,
                                n));
    // The same core already stored from another file (the core file apport or the kernel also
    // wrote, another copy of this report): stored once, known by its uncompressed content.
    auto content = fileCoreFingerprint(tmp->path());
    if (!content) return fail("CoreDump: " + content.error().message);
    auto same = sameStoredCore(store.db(), tmp->path(), *content);
    if (!same) return std::unexpected(same.error());
    if (*same) {
        CoreIngestSummary s;
        s.path = path;
        s.unchanged = true;
        s.same_as = fmt::format("core {} from {}", (*same)->first, (*same)->second);
        // The core stored from this report's head (read before its CoreDump was written) is
        // the same crash as that core: it gives way (hostile review 151, MED 2: head, journal
        // entry, whole report were 2 cores and 2 incidents for ever).
        if (entryOnly != crash.end() && entryOnly->id != (*same)->first) {
            if (own_txn)
                if (auto b = store.begin(); !b) return std::unexpected(b.error());
            auto d = store.dropCoreOf(entryOnly->source_id);
            if (d && own_txn) d = store.commit();
            if (!d) {
                if (own_txn) (void)store.rollback();
                return std::unexpected(d.error());
            }
            auto r = warned(std::move(s));
            r->warnings.push_back(fmt::format(
                "core {} (stored from this report before its CoreDump was written) is the same "
                "crash as core {}: removed",
                entryOnly->id,
                (*same)->first));
            return r;
        }
        return warned(std::move(s));
    }
    prov.content_fingerprint = *content;
    if (entryOnly != crash.end())  // stored from the report's head: this whole one replaces it
        prov.takes_over = PrefixCore{entryOnly->id, entryOnly->source_id, entryOnly->path, false};
    std::optional<std::string> cut;
    if (tmp->cut())
        cut = fmt::format(
            "CoreDump larger than the cap of {} MiB once decompressed (--max-unpacked-mib, "
            "cores.max_unpacked_mib): its first {} MiB kept",
            tmp->cap() >> 20,
            tmp->cap() >> 20);
    else if (tmp->pastEnd())
        cut = fmt::format(
            "CoreDump goes on past the core's end (byte {}, as its ELF headers state): not "
            "inflated",
            tmp->size());
    prov.note = cut;
    auto ro = opt.read;
    ro.name = "core";
    ro.follow_links = true;  // our temporary file, read through /proc/self/fd/N (a link)
    auto report = cd::readCore(tmp->path(), ro);
    if (!report) {
        auto m = report.error().message;
        if (m.starts_with(tmp->path() + ": ")) m = m.substr(tmp->path().size() + 2);
        return fail("CoreDump: " + m + (cut ? " (" + *cut + ")" : ""));
    }
    auto r = warned(storeCoreReport(store, id, *report, prov, own_txn));
    if (r && cut) r->warnings.insert(r->warnings.begin(), *cut);
    // The report's pid replaces the one the core's notes name: said when they differ (as for a
    // systemd-coredump entry; hostile review 151: silent before).
    if (r && prov.pid && report->layout.notes.pid && *report->layout.notes.pid != *prov.pid)
        r->warnings.push_back(fmt::format(
            "ProcStatus Pid {} is not the pid {} the CoreDump's notes name (a process in a PID "
            "namespace, or a report that is wrong): the report's is stored",
            *prov.pid,
            *report->layout.notes.pid));
    return r;
}

}  // namespace gpufault
