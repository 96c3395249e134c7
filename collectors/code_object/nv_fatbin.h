// CUDA fat binaries (the `.nv_fatbin` section). NVIDIA does not publish the format; layout as
// reverse-engineered in FORMATS.md §5 (n-eiling/cuda-fatbin-decompression, checked against
// nvcc 13.0 builds in LAB-NOTES.md §5). Little-endian:
//   container: u32 magic 0xBA55ED50; u16 version; u16 header_size (16); u64 fat_size
//   entry:     u16 kind (1 PTX, 2 ELF cubin, 4 old cubin); u16 ?; u32 header_size (64…112);
//              u64 size; u32 compressed_size; u32 ?; u16 minor; u16 major; u32 arch (75 = sm_75);
//              u32 name_offset; u32 name_len; u64 flags (0x2000 LZ4-style, 0x8000 zstd); u64 0;
//              u64 decompressed_size. The payload follows the entry header; the next entry
//              starts header_size + size bytes after this one. A section holds several containers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectors/code_object/bytes.h"

namespace gpufault::codeobj {

inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;

struct FatbinEntry {
    uint64_t offset = 0;  ///< file offset of the entry header
    uint16_t kind = 0;    ///< 1 PTX, 2 ELF (SASS), 4 old cubin
    uint32_t header_size = 0;
    uint64_t size = 0;              ///< payload bytes (padded; compressed size when compressed)
    uint32_t arch = 0;              ///< SM version in decimal: 80 = sm_80, 120 = sm_120
    uint16_t major = 0, minor = 0;  ///< PTX ISA version for PTX entries
    uint64_t flags = 0;
    uint32_t compressed_size = 0;  ///< unpadded compressed bytes (0 when not compressed)
    uint64_t decompressed_size = 0;
    bool compressed() const { return (flags & 0xa000) != 0; }
    bool isPtx() const { return kind == 1; }
    /// `sm_80` for SASS, `compute_90` for PTX.
    std::string target() const;
    std::string mismatch;  ///< "" or how the cubin's own header disagrees with `arch`
};

struct FatbinContainer {
    uint64_t offset = 0;  ///< file offset of the container header
    uint16_t version = 0;
    uint64_t fat_size = 0;
    std::vector<FatbinEntry> entries;
};

/// Every container in a `.nv_fatbin` section `b` (file offset `base`); zero padding between
/// containers is skipped. An uncompressed cubin's ELF header is cross-checked (e_machine 190;
/// sm in e_flags bits 8–15 from EI_ABIVERSION 8 on, else bits 0–7).
Result<std::vector<FatbinContainer>> parseNvFatbin(Bytes b, uint64_t base);

}  // namespace gpufault::codeobj
