// The record of a CUDA GPU core names its first 8 grids (hostile review 151: a forged core's
// 1 024 grids of 4 MiB names made one record's text 4 GiB and aborted gpufaultd).
#include <gtest/gtest.h>

#include "ingest/ingest_core.h"

namespace gpufault {
namespace {

TEST(CudaCoreText, TheFirstEightGridsAreNamedAndTheRestCounted) {
    coredump::CoreReport r;
    r.gpu.emplace();
    r.gpu->pid = 4242;
    for (int i = 0; i < 20; ++i) {
        coredump::CudaGrid g;
        g.grid = i + 1;
        g.kernel = "_Z6vecAddPfS_i";
        g.grid_dim[0] = g.block_dim[0] = 1;
        g.grid_dim[1] = g.grid_dim[2] = g.block_dim[1] = g.block_dim[2] = 1;
        g.host_tid = i == 0 ? 0 : 5000 + i;  // the first grid's launching thread unknown
        r.gpu->grids.push_back(g);
    }
    auto e = cudaCoreEvidence(r, "2026-12-03T10:00:00");
    ASSERT_TRUE(e);
    EXPECT_NE(e->raw.find("; grid 8 on device 0 vecAdd(float*, float*, int): 1x1x1 blocks of "
                          "1x1x1, host thread 5007; 12 more grids"),
              std::string::npos)
        << e->raw;
    EXPECT_EQ(e->raw.find("grid 9 "), std::string::npos) << e->raw;
    EXPECT_EQ(e->kernel, "_Z6vecAddPfS_i");
    EXPECT_EQ(e->tid, 5001);
    EXPECT_EQ(e->pid, 4242);
}

}  // namespace
}  // namespace gpufault
