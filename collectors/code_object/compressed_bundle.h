// Compressed clang offload bundles ("CCOB"). Source: clang/lib/Driver/OffloadBundler.cpp and
// clang/include/clang/Driver/OffloadBundler.h (CompressedOffloadBundle, LLVM 18–20), packed LE:
//   v1: "CCOB" u16 version u16 method u32 uncompressed_size u64 hash                  (20 bytes)
//   v2: "CCOB" u16 version u16 method u32 total_size u32 uncompressed_size u64 hash   (24 bytes)
//   v3: "CCOB" u16 version u16 method u64 total_size u64 uncompressed_size u64 hash   (32 bytes)
// method: 0 zlib, 1 zstd (llvm::compression::Format). total_size includes the header; v1 has
// none (the payload runs to the end of the buffer). The payload inflates to an uncompressed
// offload bundle. hash = low 64 bits of the MD5 of the uncompressed bundle (not checked here).
#pragma once

#include <cstdint>
#include <vector>

#include "collectors/code_object/bytes.h"

namespace gpufault::codeobj {

inline constexpr std::string_view kCompressedBundleMagic = "CCOB";

enum class Compression : uint16_t { Zlib = 0, Zstd = 1 };

struct CompressedBundleHeader {
    uint16_t version = 0;
    Compression method = Compression::Zlib;
    uint32_t header_size = 0;
    uint64_t total_size = 0;  ///< header + payload in bytes (v1: to the end of the buffer)
    uint64_t uncompressed_size = 0;
    uint64_t hash = 0;
};

/// Reads and checks the header at the start of `b` (no decompression). `base` = file offset of
/// `b`. Errors: unknown version or method, sizes that exceed `b`.
Result<CompressedBundleHeader> parseCompressedBundleHeader(Bytes b, uint64_t base);

/// The payload of `h`, decompressed. Refuses (before allocating) an uncompressed_size above
/// `max_bytes`, and stops with an error when the data would inflate past the declared size
/// (zip bombs) or ends short of it.
Result<std::vector<std::byte>> decompressBundle(Bytes b,
                                                const CompressedBundleHeader& h,
                                                uint64_t max_bytes,
                                                uint64_t base);

/// Builds a compressed bundle (for tests and tools): `bundle` compressed with `method`, in the
/// layout of `version` (1, 2 or 3). Level: zlib 6, zstd 3.
std::vector<std::byte> compressBundle(Bytes bundle, Compression method, uint16_t version);

}  // namespace gpufault::codeobj
