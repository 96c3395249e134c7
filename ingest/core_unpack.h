// Compressed cores made readable for libdw, which needs random access: systemd-coredump's
// `.zst` files (libzstd) and apport's gzip/zlib `CoreDump` field (zlib) are decompressed into a
// size-capped temporary file that is removed when done.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "schema/sqlite.h"

typedef struct z_stream_s z_stream;

namespace gpufault {

/// Where temporary cores go and how large they may grow.
struct UnpackLimits {
    uint64_t max_bytes = 16ull << 30;  ///< decompressed size cap (an error beyond it)
    std::string dir;                   ///< "" = $TMPDIR, else /var/tmp
};

/// Bytes of a block that TempFile::write() leaves as a hole when all are zero.
inline constexpr size_t kHoleBlock = 4096;

/// A temporary file in `dir`, mode 0600, unlinked as soon as it is created (nothing is left
/// behind, even by kill -9) and read through `/proc/self/fd/N`; closed on destruction.
class TempFile {
  public:
    static db::Result<TempFile> create(const UnpackLimits& lim, std::string_view tag);
    TempFile(TempFile&& o) noexcept;
    TempFile& operator=(TempFile&&) = delete;
    ~TempFile();
    /// Appends bytes (whole aligned 4 KiB blocks of zeros as holes: the file is as sparse as the
    /// core it unpacks); an error when the cap would be passed, the disk is full, or the first 64
    /// bytes are not the ELF header of a core (magic, ELFCLASS64, a byte order, EV_CURRENT,
    /// ET_CORE): a bomb or a non-core payload stops at its first block, not after the cap.
    db::Result<void> write(std::string_view data);
    const std::string& path() const { return path_; }
    uint64_t size() const { return size_; }
    /// The cap on its size in bytes (UnpackLimits::max_bytes).
    uint64_t cap() const { return cap_; }
    /// True when the content went on past the cap and only the first cap() bytes were kept.
    bool cut() const { return cut_; }
    /// For a cut zstd file (unzstdToTemp()): the compressed offset where its data end in
    /// mid-frame, which is the file's size; what decompressed before it is the content.
    std::optional<uint64_t> endedAt() const { return ended_at_; }
    /// True when the content went on past the end its ELF headers state (coreExtent(): the
    /// last segment, section or header table) and the rest was not decompressed: a bomb of
    /// 16 GiB behind a small core writes the small core, not 16 GiB.
    bool pastEnd() const { return past_end_; }
    /// write()s what fits of `b`: up to the cap, and up to the core's end once its headers
    /// state it (looked for as they arrive). False when the rest was not written: cut() or
    /// pastEnd() says which, or neither when the headers state no end (bad entry sizes, tables
    /// that overflow: the core reader refuses them); the caller stops decompressing. Errors
    /// are write()'s.
    db::Result<bool> append(std::string_view b);

  private:
    TempFile(std::string path, int fd, uint64_t cap) : path_(std::move(path)), fd_(fd), cap_(cap) {}
    std::string path_;
    int fd_ = -1;
    uint64_t cap_ = 0, size_ = 0;
    std::string head_;  ///< the first 64 bytes, until they are checked
    bool checked_ = false;
    bool cut_ = false;
    bool past_end_ = false;
    bool bad_headers_ = false;  ///< headers written that state no end: stop, the reader refuses
    std::optional<uint64_t> ended_at_;
    std::optional<uint64_t> end_;  ///< coreExtent()'s end, once the headers are written
    uint64_t end_retry_at_ = 64;   ///< the size at which to look for it again
    void findEnd();
    friend db::Result<TempFile> unzstdToTemp(const std::string&, const UnpackLimits&);
};

/// The compression a file's first bytes show: "zstd", "gzip", "xz", "lz4", "bzip2", or "".
std::string_view compressionOf(std::string_view head);

/// True when `path` is a zstd file whose content starts like an ELF core.
bool isZstdCore(const std::string& path);

/// Decompresses the zstd file at `path` into a temporary file. A core larger than the cap keeps
/// its first `lim.max_bytes` bytes (TempFile::cut(); systemd-coredump too keeps what fits): read
/// as a truncated core, stored from its notes when they fit. A cut file (its data end in
/// mid-frame) keeps what decompressed, TempFile::endedAt() saying where the data end: read as a
/// truncated core too. Errors name the file: not zstd, corrupt data.
db::Result<TempFile> unzstdToTemp(const std::string& path, const UnpackLimits& lim);

/// Inflates a gzip or zlib stream given in pieces into a temporary file (apport's CoreDump).
/// Content beyond the cap is not inflated: the file keeps the first `max_bytes` bytes and is
/// TempFile::cut() (read as a truncated core, as unzstdToTemp() does).
class InflateToTemp {
  public:
    static db::Result<InflateToTemp> create(const UnpackLimits& lim);
    InflateToTemp(InflateToTemp&&) noexcept;
    ~InflateToTemp();
    db::Result<void> feed(std::string_view compressed);
    /// The stream must have ended (its trailer checked); the file is then complete.
    db::Result<TempFile> finish();

  private:
    InflateToTemp(TempFile f);
    std::unique_ptr<TempFile> file_;
    std::unique_ptr<z_stream> z_;
    bool ended_ = false;
};

}  // namespace gpufault
