#include "analysis/mapped_file.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "collectors/common/small_file.h"

namespace gpufault {

MappedFile::~MappedFile() {
    if (data_ && size_) ::munmap(data_, size_);
}

std::string MappedFile::open(const std::string& path) {
    // Checked before opening (RegularFile): paths come from cores and logs, and opening a FIFO
    // blocks (and eats its writer's data) while opening a device node (/dev/kfd, /dev/dri/…)
    // runs its driver.
    auto f = RegularFile::open(path);
    if (!f) {
        if (f.error().why == FileError::Why::NotRegular) return "not a regular file";
        return std::strerror(f.error().err);
    }
    if (f->st().st_size <= 0) return "";
    size_ = static_cast<size_t>(f->st().st_size);
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, f->fd(), 0);
    if (p == MAP_FAILED) {
        size_ = 0;
        return std::strerror(errno);
    }
    data_ = p;
    return "";
}

}  // namespace gpufault
