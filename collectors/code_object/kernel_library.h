// Per-target kernel library files: the code objects rocBLAS and hipBLASLt read from disk (they
// are not mapped like a fat binary, so a missing target shows only when the library is asked
// for it). Names as Tensile writes them (Tensile/TensileCreateLibrary.py, rocBLAS ≥ 4):
//   TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx90a.co
//   TensileLibrary_lazy_gfx1030.dat   TensileLibrary_gfx906.dat
//   Kernels.so-000-gfx90a-xnack-.hsaco
// Pure: names in, targets out.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufault::codeobj {

/// The processor a kernel library file is built for (`gfx90a`), from its name: a name starting
/// with `TensileLibrary` or `Kernels.so-`, ending in `.co`, `.hsaco` or `.dat`, holding a
/// `gfx` + hex-digit token (the last one wins). nullopt for any other name (TensileManifest.txt,
/// a `.dat` without a target, `librocblas.so`).
std::optional<std::string> kernelLibraryTarget(std::string_view filename);

/// The kernel library files of one directory, by processor.
struct KernelLibraryDir {
    std::string dir;
    std::map<std::string, size_t> files;  ///< processor → number of files
    std::vector<std::string> processors() const;
};

/// Groups `paths` (files anywhere) by their directory; only kernel library files count, and
/// directories without any are left out. Sorted by directory.
std::vector<KernelLibraryDir> groupKernelLibraries(const std::vector<std::string>& paths);

/// Whether `dir` has a file whose code runs on `device` (a target text: `gfx1201`,
/// `gfx90a:xnack+`; processor equality, generic targets and the HSA override as compat.h).
bool libraryCovers(const KernelLibraryDir& dir,
                   std::string_view device,
                   std::string_view hsa_override_gfx_version = {});

}  // namespace gpufault::codeobj
