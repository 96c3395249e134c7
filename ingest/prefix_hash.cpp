#include "ingest/prefix_hash.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace gpufault {

std::optional<uint64_t> FilePrefix::at(int64_t len) {
    if (len < len_) {
        len_ = 0;
        hash_ = PrefixHasher{};
    }
    constexpr int64_t kChunk = int64_t{1} << 20;
    std::vector<char> b;
    while (len_ < len) {
        b.resize(static_cast<size_t>(std::min(len - len_, kChunk)));
        ssize_t n = ::pread(fd_, b.data(), b.size(), len_);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::nullopt;
        hash_.add(b.data(), static_cast<size_t>(n));
        len_ += n;
    }
    return hash_.value();
}

std::optional<int64_t> FilePrefix::size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return std::nullopt;
    return static_cast<int64_t>(st.st_size);
}

}  // namespace gpufault
