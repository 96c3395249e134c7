// The pieces of crash-report ingest shared by ingest_crash.cpp (these helpers, the entry-only
// store, input recognition), ingest_crash_systemd.cpp (systemd-coredump entries, journal files
// and core files) and ingest_crash_apport.cpp (apport `.crash` reports). Not a public interface.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/coredump/systemd_coredump.h"
#include "ingest/ingest_core.h"
#include "schema/store.h"

namespace gpufault::crash {

/// The first `n` bytes of the regular file at `path`; "" when it is not one or cannot be read
/// (never blocks on a FIFO: coredump::openRegular).
std::string head(const std::string& path, size_t n, bool follow_links = true);

/// The first `n` bytes of the open file `fd` (pread: its offset is left alone).
std::string headOf(int fd, size_t n);

/// Closes a descriptor when it goes out of scope.
struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
};

/// A file given as crash input, opened once (coredump::openRegular: never blocks on a FIFO,
/// refuses what is not a regular file) and described by fstat of that descriptor: what is read
/// is what was checked, even when the path is replaced meanwhile.
struct OpenedInput {
    int fd = -1;
    struct stat st {};
};
/// Opens `path` as crash input; the error names the path (not a regular file, cannot be read).
db::Result<OpenedInput> openInput(const std::string& path);

/// The last component of path `p`.
std::string baseName(const std::string& p);

/// How a crash stored from its entry alone, because its core file could not be read then, has
/// its note begin.
inline constexpr std::string_view kNotRead = "core file not read: ";

/// How far a crash is stored: not at all, from its journal entry only because its core file
/// could not be read then (the file replaces it), or completely.
enum class Stored { No, WithoutFile, Yes };
/// How far the source `id` is stored (in a read transaction of its own when `own_txn`):
/// WithoutFile also for a core kept cut at a cap (its note names "the cap of N MiB") below
/// `cap_bytes` (the cap now, when the caller unpacks: read again whole, and replaced).
db::Result<Stored> stored(Store& store,
                          const SourceIdentity& id,
                          bool own_txn,
                          uint64_t cap_bytes = 0);

/// "systemd-coredump", or "systemd-coredump (untrusted)" for an entry journald does not attest
/// (coredump::attestedBySystemdCoredump: any user can write such an entry, any file can hold one).
std::string entryOrigin(const coredump::CoredumpEntry& e);

/// What an entry says of its crash (origin, time in s, pid, comm, exe, signal, uid, boot id,
/// unit, hostname), for storeCoreReport.
CoreProvenance entryProvenance(const coredump::CoredumpEntry& e);

/// The first frame that is not generic (coredump::isGenericFrame), else the first; nullptr
/// when there are none.
const coredump::Frame* firstSpecific(const std::vector<coredump::Frame>& frames);

/// Stores an entry without a readable core: the text stack, the reason (`why`, else the
/// entry's own). `origin` "apport" for an apport report without CoreDump. `replaces`: the
/// source whose core gives way to this one (the same crash, stored earlier from less of its
/// report), its rows dropped in the same transaction.
db::Result<CoreIngestSummary> storeEntryOnly(Store& store,
                                             const SourceIdentity& id,
                                             const coredump::CoredumpEntry& e,
                                             const std::optional<std::string>& why,
                                             bool own_txn,
                                             const std::string& origin = "systemd-coredump",
                                             std::optional<int64_t> replaces = std::nullopt);

}  // namespace gpufault::crash
