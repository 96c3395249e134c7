// Kernel library file names as rocBLAS/hipBLASLt installs them (Debian's librocblas0 and
// ROCm's hipblaslt package list these names), grouped per directory and checked per device.
#include <gtest/gtest.h>

#include "collectors/code_object/kernel_library.h"

using namespace gpufault::codeobj;

TEST(KernelLibrary, TargetFromTensileFileNames) {
    EXPECT_EQ(
        kernelLibraryTarget("TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx90a.co"),
        "gfx90a");
    EXPECT_EQ(kernelLibraryTarget("TensileLibrary_lazy_gfx1030.dat"), "gfx1030");
    EXPECT_EQ(kernelLibraryTarget("TensileLibrary_gfx906.dat"), "gfx906");
    EXPECT_EQ(kernelLibraryTarget("Kernels.so-000-gfx90a-xnack-.hsaco"), "gfx90a");
    EXPECT_EQ(
        kernelLibraryTarget("TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx1201.co"),
        "gfx1201");
    EXPECT_EQ(kernelLibraryTarget("TensileLibrary_HH_HH_fallback_gfx942.hsaco"), "gfx942");
    // Not kernel library files: the manifest, a .dat without a target, the library itself,
    // a name whose only "gfx" is not followed by a processor.
    EXPECT_FALSE(kernelLibraryTarget("TensileManifest.txt"));
    EXPECT_FALSE(kernelLibraryTarget("TensileLibrary.dat"));
    EXPECT_FALSE(kernelLibraryTarget("librocblas.so.0.1"));
    EXPECT_FALSE(kernelLibraryTarget("TensileLibrary_gfxdat.co"));
    EXPECT_FALSE(kernelLibraryTarget("TensileLibrary_gfx90a.yaml"));
}

TEST(KernelLibrary, GroupsByDirectoryAndFlagsADeviceWithoutFiles) {
    auto dirs = groupKernelLibraries({
        "/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat",
        "/opt/rocm/lib/rocblas/library/"
        "TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1100.co",
        "/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat",
        "/opt/rocm/lib/rocblas/library/Kernels.so-000-gfx90a-xnack-.hsaco",
        "/opt/rocm/lib/rocblas/library/Kernels.so-000-gfx90a-xnack+.hsaco",
        "/opt/rocm/lib/rocblas/library/TensileManifest.txt",
        "/opt/rocm/lib/librocblas.so.4",
    });
    ASSERT_EQ(dirs.size(), 1u);
    EXPECT_EQ(dirs[0].dir, "/opt/rocm/lib/rocblas/library");
    EXPECT_EQ(dirs[0].processors(), (std::vector<std::string>{"gfx1100", "gfx90a"}));
    EXPECT_EQ(dirs[0].files.at("gfx1100"), 2u);
    EXPECT_EQ(dirs[0].files.at("gfx90a"), 3u);
    // The real case: a gfx1201 card and no gfx1201 files.
    EXPECT_FALSE(libraryCovers(dirs[0], "gfx1201"));
    EXPECT_TRUE(libraryCovers(dirs[0], "gfx1100"));
    EXPECT_TRUE(libraryCovers(dirs[0], "gfx90a:xnack+"));
    // HSA_OVERRIDE_GFX_VERSION=11.0.0 makes a gfx1151 load the gfx1100 files.
    EXPECT_FALSE(libraryCovers(dirs[0], "gfx1151"));
    EXPECT_TRUE(libraryCovers(dirs[0], "gfx1151", "11.0.0"));
}
