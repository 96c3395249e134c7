// A read-only mapping of a whole regular file (for code-object inventories of binaries up to
// gigabytes: pages are read only where the parsers look).
#pragma once

#include <cstddef>
#include <string>

#include "collectors/code_object/bytes.h"

namespace gpufault {

class MappedFile {
  public:
    MappedFile() = default;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();
    /// Maps `path`; "" on success, else why not (strerror, "not a regular file": FIFOs and
    /// device nodes are refused before they are opened). An empty file maps to no bytes.
    std::string open(const std::string& path);
    codeobj::Bytes bytes() const { return {static_cast<const std::byte*>(data_), size_}; }

  private:
    void* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace gpufault
