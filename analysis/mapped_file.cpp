#include "analysis/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpufault {

MappedFile::~MappedFile() {
    if (data_ && size_) ::munmap(data_, size_);
}

std::string MappedFile::open(const std::string& path) {
    // Checked before opening: paths come from cores and logs, and opening a FIFO blocks (and
    // eats its writer's data) while opening a device node (/dev/kfd, /dev/dri/…) runs its driver.
    struct stat pre {};
    if (::stat(path.c_str(), &pre) != 0) return std::strerror(errno);
    if (!S_ISREG(pre.st_mode)) return "not a regular file";
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return std::strerror(errno);
    struct stat st {};
    std::string err;
    if (::fstat(fd, &st) != 0) {
        err = std::strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
        err = "not a regular file";
    } else if (st.st_size > 0) {
        size_ = static_cast<size_t>(st.st_size);
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            err = std::strerror(errno);
            size_ = 0;
        } else {
            data_ = p;
        }
    }
    ::close(fd);
    return err;
}

}  // namespace gpufault
