#include "daemon/metrics.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "daemon/daemon.h"
#include "schema/queries.h"
#include "collectors/common/text.h"

namespace gpufault::daemon {

std::string promLabel(std::string_view v) {
    std::string out;
    for (size_t i = 0; i < v.size();) {
        char c = v[i];
        size_t n = text::utf8Length(v.substr(i));
        if (n == 0) {  // a label value must be UTF-8 (else node_exporter drops the whole file)
            out += fmt::format("\\\\x{:02x}", static_cast<unsigned char>(c));
            ++i;
            continue;
        }
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n')
            out += "\\n";
        else
            out.append(v.substr(i, n));
        i += n;
    }
    return out;
}

std::expected<std::string, std::string> renderMetrics(State& s) {
    std::string m;
    auto head = [&](const char* name, const char* type, const char* help) {
        m += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    };
    auto ev = queryEvidenceByGpu(s.store->db());
    if (!ev) return std::unexpected(ev.error().message);
    head("gpufault_evidence",
         "gauge",
         "Records (evidence rows) in the store, by kind and GPU (PCI address, else ROCr node-N, "
         "else empty): a count of records, lowered when [store] limits drop old sources.");
    for (const auto& r : *ev)
        m += fmt::format("gpufault_evidence{{kind=\"{}\",gpu=\"{}\"}} {}\n", promLabel(r.kind),
                         promLabel(r.label), r.n);
    auto inc = queryIncidentsBySignature(s.store->db());
    if (!inc) return std::unexpected(inc.error().message);
    head("gpufault_incidents",
         "gauge",
         "Incidents (faults joined from their records) in the store, by kind and signature: a "
         "count of incidents, as of the worker's last correlation pass.");
    for (const auto& r : *inc)
        m += fmt::format("gpufault_incidents{{kind=\"{}\",signature=\"{}\"}} {}\n",
                         promLabel(r.kind), promLabel(r.label), r.n);
    std::vector<StreamStatus> streams;
    uint64_t notFollowed = 0;
    for (const auto& src : s.sources)
        for (auto& st : src->status()) {
            if (!st.error.empty()) {
                notFollowed += st.not_followed;  // a series each: a directory could flood it
                continue;
            }
            streams.push_back(std::move(st));
        }
    struct Metric {
        const char* name;
        const char* type;
        const char* help;
        uint64_t StreamStatus::*field;
    };
    static const Metric kStream[] = {
        {"gpufault_source_lines_total", "counter",
         "Lines read from the stream since the daemon started (kmsg: records; journal: entries; "
         "kept across reloads).",
         &StreamStatus::lines},
        {"gpufault_source_lag", "gauge",
         "Input of the stream not read yet: bytes for a file, cores queued for unwinding for a "
         "core directory, recording files queued for allocations; 0 for kmsg and journal (not "
         "measured).",
         &StreamStatus::lag},
        {"gpufault_source_lost_records_total", "counter",
         "Records lost before they were read since the daemon started: kmsg records overwritten "
         "in the ring buffer (exact); journal: times the checkpoint entry had been vacuumed "
         "(later entries may be lost too).",
         &StreamStatus::lost_records},
        {"gpufault_source_lost_bytes_total", "counter",
         "Bytes of a file truncated before they were read, since the daemon started (a lower "
         "bound: only bytes the daemon had seen).",
         &StreamStatus::lost_bytes},
    };
    for (const auto& k : kStream) {
        head(k.name, k.type, k.help);
        for (const auto& st : streams)
            m += fmt::format("{}{{source=\"{}\",name=\"{}\"}} {}\n", k.name, st.source,
                             promLabel(st.name), st.*k.field);
    }
    head("gpufault_files_not_followed",
         "gauge",
         "Files matched by [files] globs (or refused in the allocation directory) that are not "
         "followed: cannot be opened, over files.max_open, hard links; a count of files "
         "(gpufault status names them).");
    m += fmt::format("gpufault_files_not_followed {}\n", notFollowed);
    head("gpufault_store_bytes",
         "gauge",
         "Size of the store on disk in bytes: the SQLite database and its write-ahead log.");
    m += fmt::format("gpufault_store_bytes {}\n", storeFileBytes(s.cfg.store_path));
    head("gpufault_store_error",
         "gauge",
         "1 while the store cannot be written (disk full, I/O error; retried), else 0.");
    m += fmt::format("gpufault_store_error {}\n", s.store_error.empty() ? 0 : 1);
    head("gpufault_commits_total",
         "counter",
         "Store transactions committed by the event loop since the daemon started (each holds "
         "records and the positions of the sources that produced them).");
    m += fmt::format("gpufault_commits_total {}\n", s.commits);
    return m;
}

std::expected<void, std::string> writeMetrics(State& s) {
    auto text = renderMetrics(s);
    if (!text) return std::unexpected(text.error());
    const std::string& path = s.cfg.metrics_path;
    // A new file of a unique name (O_EXCL: never through a link another user planted in the
    // directory); node_exporter reads only `*.prom`, so it never sees the temporary.
    std::string tmp = path + ".XXXXXX";
    int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        // ProtectSystem=strict: ReadWritePaths= took only directories that existed at start.
        return std::unexpected(fmt::format(
            "{}: {}{}", tmp, std::strerror(err),
            err == EROFS ? " (a directory created after the service started: systemctl "
                           "restart gpufaultd)"
                         : ""));
    }
    // 0644 whatever the umask (the unit's UMask=0027): node_exporter reads it as its own user.
    if (::fchmod(fd, 0644) != 0) {
        std::string e = std::strerror(errno);
        ::close(fd);
        ::unlink(tmp.c_str());
        return std::unexpected(fmt::format("{}: {}", tmp, e));
    }
    const char* p = text->data();
    size_t left = text->size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            std::string e = std::strerror(errno);
            ::close(fd);
            ::unlink(tmp.c_str());
            return std::unexpected(fmt::format("{}: {}", tmp, e));
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
    ::fsync(fd);
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        std::string e = std::strerror(errno);
        ::unlink(tmp.c_str());
        return std::unexpected(fmt::format("{}: {}", path, e));
    }
    return {};
}

}  // namespace gpufault::daemon
