#include "ingest/core_unpack.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "collectors/coredump/core_elf.h"
#include "collectors/coredump/core_reader.h"

namespace gpufault {

namespace {

db::Error err(const std::string& m) {
    return db::Error{m};
}

}  // namespace

db::Result<TempFile> TempFile::create(const UnpackLimits& lim, std::string_view tag) {
    std::string dir = lim.dir;
    if (dir.empty()) {
        const char* t = std::getenv("TMPDIR");
        dir = t && *t ? t : "/var/tmp";
    }
    std::string tmpl = fmt::format("{}/gpufault-{}-XXXXXX", dir, tag);
    int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd < 0)
        return std::unexpected(
            err(fmt::format("temporary file in {}: {}", dir, std::strerror(errno))));
    // Removed at once: nothing is left behind even by kill -9. libdw and the unwinding child
    // (forked, not exec'd: it keeps the descriptor) open it through /proc/self/fd.
    ::unlink(tmpl.c_str());
    return TempFile(fmt::format("/proc/self/fd/{}", fd), fd, lim.max_bytes);
}

TempFile::TempFile(TempFile&& o) noexcept
    : path_(std::move(o.path_)),
      fd_(o.fd_),
      cap_(o.cap_),
      size_(o.size_),
      head_(std::move(o.head_)),
      checked_(o.checked_),
      cut_(o.cut_),
      past_end_(o.past_end_),
      bad_headers_(o.bad_headers_),
      ended_at_(o.ended_at_),
      end_(o.end_),
      end_retry_at_(o.end_retry_at_) {
    o.fd_ = -1;
    o.path_.clear();
}

TempFile::~TempFile() {
    if (fd_ >= 0) ::close(fd_);
}

namespace {

/// Why the first 64 decompressed bytes `h` are not a 64-bit ELF core's header; "" when they are.
std::string notCoreHeader(std::string_view h) {
    if (!h.starts_with("\x7f"
                       "ELF"))
        return "not an ELF file (no ELF magic at decompressed offset 0)";
    if (h[4] != 2) return fmt::format("not a 64-bit ELF core (EI_CLASS {})", int(h[4]));
    if (h[5] != 1 && h[5] != 2) return fmt::format("bad ELF byte order (EI_DATA {})", int(h[5]));
    if (h[6] != 1) return fmt::format("bad ELF version (EI_VERSION {})", int(h[6]));
    if (!coredump::sniffCore(h)) return "an ELF file but not a core (e_type is not ET_CORE)";
    return "";
}

}  // namespace

db::Result<void> TempFile::write(std::string_view data) {
    if (!checked_) {
        head_.append(data.substr(0, 64 - std::min<size_t>(64, head_.size())));
        if (head_.size() >= 64) {
            checked_ = true;
            if (auto why = notCoreHeader(head_); !why.empty())
                return std::unexpected(err(why + "; stopped after the first block"));
        }
    }
    if (size_ + data.size() > cap_)
        return std::unexpected(
            err(fmt::format("decompressed core larger than the cap of {} MiB", cap_ >> 20)));
    // Whole 4 KiB blocks of zeros become holes: a sparse core (most of a big one) unpacks
    // sparse instead of filling the disk with zeros up to the cap (hostile12c). Runs of other
    // blocks are written with one pwrite each.
    static const std::string kZero(kHoleBlock, '\0');
    auto put = [&](std::string_view run, uint64_t at) -> db::Result<void> {
        while (!run.empty()) {
            ssize_t n = ::pwrite(fd_, run.data(), run.size(), static_cast<off_t>(at));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0)
                return std::unexpected(
                    err(fmt::format("writing {}: {}", path_, std::strerror(errno))));
            run.remove_prefix(static_cast<size_t>(n));
            at += static_cast<uint64_t>(n);
        }
        return {};
    };
    size_t runStart = 0, i = 0;
    uint64_t base = size_;
    while (i < data.size()) {
        size_t n = std::min<size_t>(data.size() - i, kHoleBlock - (base + i) % kHoleBlock);
        bool hole = n == kHoleBlock && std::memcmp(data.data() + i, kZero.data(), n) == 0;
        if (hole) {
            if (auto r = put(data.substr(runStart, i - runStart), base + runStart); !r) return r;
            runStart = i + n;
        }
        i += n;
    }
    if (auto r = put(data.substr(runStart), base + runStart); !r) return r;
    size_ += data.size();
    // A hole at the end still counts in the file's size.
    if (runStart == data.size() && ::ftruncate(fd_, static_cast<off_t>(size_)) != 0)
        return std::unexpected(err(fmt::format("writing {}: {}", path_, std::strerror(errno))));
    if (!end_ && size_ >= end_retry_at_) findEnd();
    return {};
}

void TempFile::findEnd() {
    auto x = coredump::coreExtent(
        [this](uint64_t off, size_t n) {
            std::string s(n, '\0');
            ssize_t got = off > size_ ? 0 : ::pread(fd_, s.data(), n, static_cast<off_t>(off));
            s.resize(got > 0 ? static_cast<size_t>(got) : 0);
            return s;
        },
        size_);
    end_ = x.end;
    end_retry_at_ = x.retry_at;
    // Headers there but no end from them (a bad entry size, a table or segment that overflows),
    // or the program header count in a section header 0 past the cap: readCoreLayout()
    // refuses such a core, so nothing more is decompressed (hostile review 152: it went on to
    // the cap, 16 GiB by default). A section table past the cap (gdb's gcore writes it last)
    // is a core cut at the cap, read from its notes.
    bad_headers_ =
        !end_ && (end_retry_at_ == UINT64_MAX || (x.needs_section_header0 && end_retry_at_ > cap_));
}

db::Result<bool> TempFile::append(std::string_view b) {
    while (!b.empty()) {
        if (bad_headers_) return false;
        uint64_t limit = std::min(cap_, end_.value_or(UINT64_MAX));
        uint64_t room = limit - std::min(limit, size_);
        if (room == 0) {  // past the core's end, or the cap: the rest is not decompressed
            (end_ && *end_ <= cap_ ? past_end_ : cut_) = true;
            return false;
        }
        // Up to where the end may become known, so that nothing past it is written.
        uint64_t piece = std::min<uint64_t>(b.size(), room);
        if (!end_ && end_retry_at_ > size_) piece = std::min(piece, end_retry_at_ - size_);
        if (auto w = write(b.substr(0, static_cast<size_t>(piece))); !w)
            return std::unexpected(w.error());
        b.remove_prefix(static_cast<size_t>(piece));
    }
    return true;
}

std::string_view compressionOf(std::string_view h) {
    if (h.starts_with("\x28\xb5\x2f\xfd")) return "zstd";
    // A skippable frame (magic 0x184D2A50..5F, little-endian) may come first: libzstd skips it.
    if (h.size() >= 4 && (static_cast<unsigned char>(h[0]) & 0xf0) == 0x50 &&
        h.substr(1, 3) == "\x2a\x4d\x18")
        return "zstd";
    if (h.starts_with("\x1f\x8b")) return "gzip";
    if (h.starts_with("\xfd"
                      "7zXZ"))
        return "xz";
    if (h.starts_with("\x04\x22\x4d\x18")) return "lz4";
    if (h.starts_with("BZh")) return "bzip2";
    return "";
}

namespace {

/// Streams the zstd file at `path` through `out` until it returns false or the data end. The
/// result: nullopt when the stream ended whole (or `out` stopped it), else the file's size in
/// bytes, the compressed offset where the data end in mid-frame (a cut file: what decompressed
/// was given to `out`). Skippable frames (at the start too) are skipped by libzstd.
db::Result<std::optional<uint64_t>> unzstd(
    const std::string& path, const std::function<db::Result<bool>(std::string_view)>& out) {
    auto opened = coredump::openRegular(path);
    if (!opened) return std::unexpected(err(opened.error().message));
    int fd = *opened;
    struct Guard {
        int fd;
        ZSTD_DStream* z;
        ~Guard() {
            ::close(fd);
            ZSTD_freeDStream(z);
        }
    } g{fd, ZSTD_createDStream()};
    ZSTD_initDStream(g.z);
    std::vector<char> in(ZSTD_DStreamInSize()), buf(ZSTD_DStreamOutSize());
    size_t last = 0;
    uint64_t offset = 0;
    for (;;) {
        ssize_t n = ::read(fd, in.data(), in.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::unexpected(err(fmt::format("{}: {}", path, std::strerror(errno))));
        if (n == 0) break;
        ZSTD_inBuffer ib{in.data(), static_cast<size_t>(n), 0};
        while (ib.pos < ib.size) {
            ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
            last = ZSTD_decompressStream(g.z, &ob, &ib);
            if (ZSTD_isError(last))
                return std::unexpected(err(fmt::format("{}: zstd: {} (compressed offset {})",
                                                       path,
                                                       ZSTD_getErrorName(last),
                                                       offset + ib.pos)));
            auto more = out(std::string_view(buf.data(), ob.pos));
            if (!more)
                return std::unexpected(err(fmt::format("{}: {}", path, more.error().message)));
            if (!*more) return std::nullopt;
        }
        offset += static_cast<uint64_t>(n);
    }
    if (last != 0) return offset;
    return std::nullopt;
}

}  // namespace

bool isZstdCore(const std::string& path) {
    char magic[4] = {};
    auto fd = coredump::openRegular(path);
    if (!fd) return false;
    ssize_t n = ::pread(*fd, magic, 4, 0);
    ::close(*fd);
    if (n != 4 || compressionOf(std::string_view(magic, 4)) != "zstd") return false;
    std::string head;
    (void)unzstd(path, [&](std::string_view b) -> db::Result<bool> {
        head.append(b.substr(0, 64 - std::min<size_t>(64, head.size())));
        return head.size() < 64;
    });
    return coredump::sniffCore(head).has_value();
}

db::Result<TempFile> unzstdToTemp(const std::string& path, const UnpackLimits& lim) {
    auto t = TempFile::create(lim, "core");
    if (!t) return std::unexpected(t.error());
    auto r = unzstd(path, [&](std::string_view b) { return t->append(b); });
    if (!r) return std::unexpected(r.error());
    t->ended_at_ = *r;
    return std::move(*t);
}

InflateToTemp::InflateToTemp(TempFile f)
    : file_(std::make_unique<TempFile>(std::move(f))), z_(std::make_unique<z_stream>()) {}

InflateToTemp::InflateToTemp(InflateToTemp&& o) noexcept = default;

InflateToTemp::~InflateToTemp() {
    if (z_) inflateEnd(z_.get());
}

db::Result<InflateToTemp> InflateToTemp::create(const UnpackLimits& lim) {
    auto t = TempFile::create(lim, "apport");
    if (!t) return std::unexpected(t.error());
    InflateToTemp x(std::move(*t));
    std::memset(x.z_.get(), 0, sizeof(z_stream));
    // 32 + 15: a gzip or a zlib header, detected (apport's legacy_zlib reports hold zlib).
    if (inflateInit2(x.z_.get(), 32 + 15) != Z_OK) return std::unexpected(err("zlib: init"));
    return x;
}

db::Result<void> InflateToTemp::feed(std::string_view c) {
    if (ended_) return {};  // bytes after the stream's end are ignored
    static thread_local std::vector<char> buf(1 << 20);
    z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(c.data()));
    z_->avail_in = static_cast<uInt>(c.size());
    while (z_->avail_in > 0 && !ended_) {
        z_->next_out = reinterpret_cast<Bytef*>(buf.data());
        z_->avail_out = static_cast<uInt>(buf.size());
        int r = inflate(z_.get(), Z_NO_FLUSH);
        if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
            return std::unexpected(
                err(fmt::format("CoreDump: zlib: {}", z_->msg ? z_->msg : "error")));
        std::string_view out(buf.data(), buf.size() - z_->avail_out);
        auto more = file_->append(out);  // what fits is kept, the rest not inflated
        if (!more) return std::unexpected(more.error());
        if (!*more) ended_ = true;
        if (r == Z_STREAM_END) ended_ = true;
        if (r == Z_BUF_ERROR) break;
    }
    return {};
}

db::Result<TempFile> InflateToTemp::finish() {
    if (!ended_)
        return std::unexpected(err("CoreDump: the compressed data end early (cut report)"));
    return std::move(*file_);
}

}  // namespace gpufault
