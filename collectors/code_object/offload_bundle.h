// Uncompressed clang offload bundles. Source: clang/lib/Driver/OffloadBundler.cpp
// (clang-offload-bundler, LLVM 15–20), little-endian, entries unaligned:
//   char[24] "__CLANG_OFFLOAD_BUNDLE__"; u64 n;
//   n × { u64 offset (from the bundle start, != 0); u64 size; u64 id_len; char id[id_len] }
//   then the payloads (an AMDGPU ELF code object per device entry; the host entry is empty).
#pragma once

#include <string>
#include <vector>

#include "collectors/code_object/bytes.h"
#include "collectors/code_object/target_id.h"

namespace gpufault::codeobj {

inline constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";

/// One entry: where its payload lies (bytes, from the bundle start) and its entry ID.
struct BundleEntry {
    uint64_t offset = 0, size = 0;
    std::string id;  ///< `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`
    BundleEntryId parsed;
};

/// A parsed bundle. `extent` is the number of bytes it spans (header and payloads).
struct OffloadBundle {
    uint64_t extent = 0;
    std::vector<BundleEntry> entries;
};

/// Parses the bundle at the start of `b` (which may run on past the bundle). `base` is the file
/// offset of `b`. Every count, length and payload range is checked against `b`: an entry count
/// of 2^63 or an ID length of 2^40 is an error naming its offset, never an allocation.
Result<OffloadBundle> parseOffloadBundle(Bytes b, uint64_t base);

}  // namespace gpufault::codeobj
