// The prefix hash of a file source (sources.prefix_hash): a hash of the file's bytes [0, offset)
// stored with a checkpoint, re-checked before the checkpoint is resumed. Shared by gpufaultd
// (daemon/sources: tailing, copytruncate) and `gpufault ingest` (ingest/source_identity.h).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace gpufault {

/// Checkpoints beyond this many bytes get no prefix hash (and are resumed without one): a
/// resumed stream's prefix is hashed up to this, at most (64 MiB).
inline constexpr int64_t kPrefixHashCap = int64_t{64} << 20;

/// A hash of a file's bytes from offset 0, extended as they are read: 8-byte words, a
/// multiply-xorshift step each (fast enough to run over everything read). Values are only
/// compared with values of the same kind, on the same machine.
class PrefixHasher {
  public:
    void add(const char* p, size_t len) {
        for (; len > 0 && n_ > 0; ++p, --len) push(static_cast<unsigned char>(*p));
        for (; len >= 8; p += 8, len -= 8) {
            uint64_t w;  // little-endian, as push() builds it
            if constexpr (std::endian::native == std::endian::little) {
                std::memcpy(&w, p, 8);  // one load (the byte loop was not folded into one)
            } else {
                w = 0;
                for (int i = 0; i < 8; ++i)
                    w |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
            }
            mix(w);
        }
        for (; len > 0; ++p, --len) push(static_cast<unsigned char>(*p));
    }
    /// The hash of the bytes added so far (a partial last word and its length included).
    uint64_t value() const {
        PrefixHasher c = *this;
        c.mix(word_ ^ (uint64_t{n_} << 59));
        return c.h_;
    }

  private:
    void push(unsigned char c) {
        word_ |= uint64_t{c} << (8 * n_);
        if (++n_ == 8) {
            mix(word_);
            word_ = 0;
            n_ = 0;
        }
    }
    void mix(uint64_t w) {
        h_ = (h_ ^ w) * 0x9e3779b97f4a7c15ull;
        h_ ^= h_ >> 29;
    }
    uint64_t h_ = 1469598103934665603ull, word_ = 0;
    unsigned n_ = 0;  ///< bytes in word_
};

/// PrefixHasher over an open file's bytes, extended on demand by pread() (the descriptor's
/// offset is not moved: another thread may read() it meanwhile). Not thread-safe.
class FilePrefix {
  public:
    explicit FilePrefix(int fd) : fd_(fd) {}
    /// The hash of bytes [0, len): continues from the last call when `len` is not below it,
    /// else starts again from 0. nullopt when the file has fewer bytes or cannot be read.
    std::optional<uint64_t> at(int64_t len);
    /// The file's size now (bytes, fstat); nullopt when it cannot be read.
    std::optional<int64_t> size() const;

  private:
    int fd_;
    int64_t len_ = 0;  ///< `hash_` holds bytes [0, len_)
    PrefixHasher hash_;
};

}  // namespace gpufault
