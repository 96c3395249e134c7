#include "ingest/core_fingerprint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "collectors/coredump/core_reader.h"
#include "ingest/core_unpack.h"
#include "schema/core_queries.h"

namespace gpufault {

std::string coreFingerprint(std::string_view head, uint64_t size) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : head.substr(0, 4096)) h = (h ^ c) * 1099511628211ull;
    return fmt::format("core-{:016x}-{}", h, size);
}

std::string coreSourceFingerprint(std::string_view head, uint64_t size, int64_t mtime_ns) {
    return fmt::format("{}-m{}", coreFingerprint(head, size), mtime_ns);
}

namespace {

constexpr off_t kBlock = 4096;
constexpr size_t kChunk = 1 << 20;  // bytes per read(), a multiple of kBlock

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

struct StateFree {
    void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};

/// The next stretch of `fd` at or after `pos` that may hold data, as [first, end) rounded out to
/// whole blocks and cut at `size`; first == size when only holes are left. A file system that
/// does not know holes gives all of it.
std::pair<off_t, off_t> dataAfter(int fd, off_t pos, off_t size) {
    off_t data = ::lseek(fd, pos, SEEK_DATA);
    if (data < 0) return errno == ENXIO ? std::pair{size, size} : std::pair{pos, size};
    data -= data % kBlock;
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0 || hole > size) hole = size;
    if (hole % kBlock) hole = std::min(size, hole + kBlock - hole % kBlock);
    return {std::max(data, pos), hole};
}

}  // namespace

db::Result<std::string> fileCoreFingerprint(const std::string& path,
                                            std::optional<uint64_t> limit) {
    auto fail = [&](int e) { return std::unexpected(db::Error{path + ": " + std::strerror(e)}); };
    auto opened = coredump::openRegular(path);  // never blocks on a FIFO
    if (!opened) return std::unexpected(db::Error{opened.error().message});
    Fd f{*opened};
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) return fail(errno);
    const off_t size = limit ? std::min<off_t>(st.st_size, static_cast<off_t>(*limit)) : st.st_size;
    std::unique_ptr<XXH3_state_t, StateFree> h(XXH3_createState());
    if (!h || XXH3_64bits_reset(h.get()) != XXH_OK) return fail(ENOMEM);
    static const char kZero[kBlock] = {};
    std::vector<char> buf(kChunk);
    off_t pos = 0;
    while (pos < size) {
        auto [first, end] = dataAfter(f.fd, pos, size);
        for (pos = first; pos < end;) {
            size_t want = static_cast<size_t>(std::min<off_t>(end - pos, kChunk));
            ssize_t got = ::pread(f.fd, buf.data(), want, pos);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) return fail(errno);
            if (got == 0)
                return std::unexpected(db::Error{fmt::format(
                    "{}: the file shrank while read (to {} of {} bytes)", path, pos, size)});
            // Whole blocks only, but for the file's last one: a short read is read on.
            size_t n = static_cast<size_t>(got);
            if (pos + got < end) n -= n % kBlock;
            if (n == 0) continue;
            for (size_t b = 0; b < n; b += kBlock) {
                size_t len = std::min<size_t>(kBlock, n - b);
                if (std::memcmp(buf.data() + b, kZero, len) == 0) continue;  // as a hole
                uint64_t at = static_cast<uint64_t>(pos) + b;
                XXH3_64bits_update(h.get(), &at, sizeof at);
                XXH3_64bits_update(h.get(), buf.data() + b, len);
            }
            pos += static_cast<off_t>(n);
        }
        pos = std::max(pos, end);
    }
    return fmt::format("core2-{:016x}-{}", XXH3_64bits_digest(h.get()), size);
}

db::Result<std::optional<std::pair<int64_t, std::string>>> sameStoredCore(
    db::Db& d, const std::string& path, const std::string& content) {
    using Found = std::optional<std::pair<int64_t, std::string>>;
    auto same = queryCoreByFingerprint(d, content);
    if (!same || *same) return same;
    // Cores stored before `core2-` (a fingerprint of the first 4 KiB and the size): one whose
    // first 4 KiB and size match is the same core only when its file, read again, has this
    // content; one whose file is gone or unreadable (or compressed) is not taken as the same.
    auto opened = coredump::openRegular(path);  // never blocks on a FIFO
    if (!opened) return std::unexpected(db::Error{opened.error().message});
    Fd f{*opened};
    struct stat st {};
    std::string head(4096, '\0');
    ssize_t got = ::fstat(f.fd, &st) == 0 ? ::pread(f.fd, head.data(), head.size(), 0) : -1;
    if (got < 0) return std::unexpected(db::Error{path + ": " + std::strerror(errno)});
    head.resize(static_cast<size_t>(got));
    auto older =
        queryCoresByHeadFingerprint(d, coreFingerprint(head, static_cast<uint64_t>(st.st_size)));
    if (!older) return std::unexpected(older.error());
    if (older->empty()) return Found{};
    // The stored file may itself be this new core (a crash written over a stored core's path):
    // reading it again proves nothing then. The notes do: another pid or crashing thread is
    // another crash (hostile12c HIGH 3).
    int fd = f.fd;
    auto layout = coredump::readCoreLayout(
        [fd](uint64_t off, size_t n) {
            std::string b(n, '\0');
            ssize_t got = ::pread(fd, b.data(), n, static_cast<off_t>(off));
            b.resize(got > 0 ? static_cast<size_t>(got) : 0);
            return b;
        },
        static_cast<uint64_t>(st.st_size));
    for (const auto& c : *older) {
        if (layout) {
            const auto& notes = layout->notes;
            if (c.pid && notes.pid && *c.pid != *notes.pid) continue;
            if (c.tid && notes.crashingTid() && *c.tid != *notes.crashingTid()) continue;
        }
        auto fp = fileCoreFingerprint(c.path);
        if (fp && *fp == content) return Found{std::pair{c.id, c.path}};
    }
    return Found{};
}

namespace {

/// The size in bytes a `core2-<hash>-<size>` fingerprint states; nullopt for another form.
std::optional<uint64_t> fingerprintSize(const std::string& fp) {
    auto dash = fp.rfind('-');
    if (!fp.starts_with("core2-") || dash == std::string::npos) return std::nullopt;
    try {
        return std::stoull(fp.substr(dash + 1));
    } catch (...) {
        return std::nullopt;
    }
}

/// fileCoreFingerprint() of the first `limit` bytes of the stored core at `path`, decompressed
/// first when it is a zstd file; nullopt when it cannot be read.
std::optional<std::string> storedPrefix(const std::string& path, uint64_t limit) {
    auto fd = coredump::openRegular(path);
    if (!fd) return std::nullopt;
    char magic[4] = {};
    ssize_t n = ::pread(*fd, magic, 4, 0);
    ::close(*fd);
    if (n == 4 && compressionOf(std::string_view(magic, 4)) == "zstd") {
        auto t = unzstdToTemp(path, UnpackLimits{});
        if (!t) return std::nullopt;
        auto fp = fileCoreFingerprint(t->path(), limit);
        return fp ? std::optional(*fp) : std::nullopt;
    }
    auto fp = fileCoreFingerprint(path, limit);
    return fp ? std::optional(*fp) : std::nullopt;
}

}  // namespace

db::Result<std::optional<PrefixCore>> prefixStoredCore(db::Db& d,
                                                       const std::string& path,
                                                       const std::string& content) {
    auto size = fingerprintSize(content);
    if (!size) return std::optional<PrefixCore>{};
    auto opened = coredump::openRegular(path);
    if (!opened) return std::unexpected(db::Error{opened.error().message});
    Fd f{*opened};
    int fd = f.fd;
    auto layout = coredump::readCoreLayout(
        [fd](uint64_t off, size_t n) {
            std::string b(n, '\0');
            ssize_t got = ::pread(fd, b.data(), n, static_cast<off_t>(off));
            b.resize(got > 0 ? static_cast<size_t>(got) : 0);
            return b;
        },
        *size);
    // Notes cut or without a crashing thread and command: nothing to match on.
    if (!layout || !layout->notes.crashingTid() || layout->notes.comm.empty())
        return std::optional<PrefixCore>{};
    const auto& n = layout->notes;
    std::optional<int64_t> signal, addr;
    if (n.siginfo) {
        signal = n.siginfo->signo;
        if (n.siginfo->addr) addr = static_cast<int64_t>(*n.siginfo->addr);
    } else if (n.cursig) {
        signal = *n.cursig;
    }
    auto cands = queryCoresOfCrash(d, *n.crashingTid(), signal, addr, n.comm);
    if (!cands) return std::unexpected(cands.error());
    for (const auto& c : *cands) {
        auto theirs = fingerprintSize(c.content_fingerprint);
        if (!theirs || *theirs == *size) continue;  // the same size: equal fingerprints or not
        if (*theirs > *size) {  // this core is the cut one: a prefix of the stored core?
            auto fp = storedPrefix(c.path, *size);
            if (fp && *fp == content)
                return std::optional(PrefixCore{c.id, c.source_id, c.path, true});
        } else {  // the stored core is the cut one: a prefix of this core?
            auto fp = fileCoreFingerprint(path, *theirs);
            if (!fp) return std::unexpected(fp.error());
            if (*fp == c.content_fingerprint)
                return std::optional(PrefixCore{c.id, c.source_id, c.path, false});
        }
    }
    return std::optional<PrefixCore>{};
}

}  // namespace gpufault
