// A read-only mapping of a whole regular file (for code-object inventories of binaries up to
// gigabytes: pages are read only where the parsers look).
#pragma once

#include <cstddef>
#include <string>

#include "collectors/code_object/bytes.h"

namespace gpufault {

/// The file may be cut short by its owner while it is mapped (module paths come from cores and
/// logs: a user's own library): a page past the new end would raise SIGBUS and kill the
/// process (gpufaultd as root). While mapped, such a page reads as zeros instead (a SIGBUS
/// handler maps a zero page there) and shrank() tells; any other SIGBUS keeps its default
/// action. At most kMaxGuarded mappings at once are guarded; beyond them the file is read into
/// memory instead.
class MappedFile {
  public:
    static constexpr size_t kMaxGuarded = 64;
    MappedFile() = default;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();
    /// Maps `path`; "" on success, else why not (strerror, "not a regular file": FIFOs and
    /// device nodes are refused before they are opened). An empty file maps to no bytes.
    std::string open(const std::string& path);
    codeobj::Bytes bytes() const {
        return {static_cast<const std::byte*>(data_ ? data_ : copy_.data()), size_};
    }
    /// True when a page of the mapping was found past the file's end (it was cut short while
    /// mapped): the bytes read there were zeros, not the file's.
    bool shrank() const;

  private:
    void* data_ = nullptr;
    size_t size_ = 0;
    int slot_ = -1;     ///< the guard's slot (-1: none)
    std::string copy_;  ///< the file's bytes when no guard slot was free
};

}  // namespace gpufault
