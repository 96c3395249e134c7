// What GPU code a file carries: every offload bundle (plain or compressed) of an ELF's
// `.hip_fatbin`, every CUDA fat binary container of its `.nv_fatbin`, or a bare bundle /
// AMDGPU code object file. Pure: the file's bytes in, an inventory out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/code_object/amdgpu_code_object.h"
#include "collectors/code_object/bytes.h"
#include "collectors/code_object/compressed_bundle.h"
#include "collectors/code_object/nv_fatbin.h"
#include "collectors/code_object/offload_bundle.h"

namespace gpufault::codeobj {

/// One offload bundle entry, with its code object checked against its label.
struct EntryInfo {
    BundleEntry entry;
    std::optional<AmdCodeObject> code;  ///< device entries whose payload parsed
    std::string mismatch;               ///< checkLabel(); "" when the label is right
    std::string code_error;             ///< why the payload did not parse, "" otherwise
};

/// A unit of code selection: a bundle (HIP picks one entry per device from each) or a
/// CUDA fat binary container, or a bare code object file.
struct BundleInfo {
    enum class Kind : uint8_t { Offload, CudaFatbin, CodeObject } kind = Kind::Offload;
    uint64_t offset = 0;                               ///< file offset of its header
    uint64_t size = 0;                                 ///< bytes it spans in the file
    std::optional<CompressedBundleHeader> compressed;  ///< CCOB bundles
    bool decompressed = false;                         ///< compressed and inflated (entries known)
    std::vector<EntryInfo> entries;                    ///< Offload / CodeObject
    FatbinContainer fatbin;                            ///< CudaFatbin
    /// Device targets: entry target IDs (host entries left out), or `sm_80` / `compute_90`.
    std::vector<std::string> targets() const;
    /// Kernel names (mangled) of its code objects.
    std::vector<std::string> kernels() const;
};

struct Inventory {
    std::string format;  ///< "ELF", "offload bundle", "AMDGPU code object"
    std::vector<BundleInfo> bundles;
    uint64_t hip_wrappers = 0;  ///< 24-byte HIPF wrappers in .hipFatBinSegment
    std::vector<Error> errors;  ///< problems found; the rest was still read
};

struct InventoryOptions {
    bool decompress = true;                  ///< inflate CCOB bundles to learn their entries
    uint64_t max_decompressed = 1ull << 30;  ///< per bundle, in bytes
    bool kernels = true;  ///< read kernel names (each code object's symbol table)
};

/// True when the file is something `inventory` reads (ELF, a bundle, a CCOB).
bool looksLikeCodeContainer(Bytes file);

/// Inventories `file`. An error when it is neither ELF nor a bundle; per-bundle problems
/// (truncation, bad counts, corrupt compression) land in `errors` with their file offsets.
Result<Inventory> inventory(Bytes file, const InventoryOptions& opt = {});

/// Every bundle found in `region` (file offset `base`) by validated scanning for the two
/// bundle magics; a magic whose header does not validate is an error, and scanning resumes
/// after it. Bundles' payloads are skipped, so magics inside code objects are not matched.
void scanBundles(Bytes region, uint64_t base, const InventoryOptions& opt, Inventory& out);

}  // namespace gpufault::codeobj
