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

// Only the place the tables' links reached is stated (hostile review 151: a warp whose block
// and SM rows were not found read "device 0 SM 0 warp 12 block (0,0,0)").
TEST(CudaCoreText, AnExceptionStatesOnlyThePlaceItsTablesReached) {
    coredump::CoreReport r;
    r.gpu.emplace();
    r.gpu->pid = 4242;
    coredump::CudaException x;
    x.code = 14;
    x.lanes = 1;
    x.warp = 12;
    x.warp_known = true;
    x.thread[0] = 5;
    x.pc = 0x7fff0010;
    r.gpu->exceptions = {x};
    r.gpu->exceptions_total = 1;
    r.gpu->exception_warps = 1;
    auto e = cudaCoreEvidence(r, "2026-12-03T10:00:00");
    ASSERT_TRUE(e);
    EXPECT_NE(e->raw.find("; Warp Illegal Address on SM unknown warp 12 thread (5,0,0) pc "
                          "0x7fff0010, 1 warps or SMs with an exception"),
              std::string::npos)
        << e->raw;
    EXPECT_EQ(e->reason, "CUDA GPU core: Warp Illegal Address");
    r.gpu->exceptions[0].block_known = r.gpu->exceptions[0].sm_known = true;
    r.gpu->exceptions[0].sm = 7;
    r.gpu->exceptions[0].block[0] = 3;
    e = cudaCoreEvidence(r, "2026-12-03T10:00:00");
    EXPECT_NE(e->raw.find("on device 0 SM 7 warp 12 block (3,0,0) thread (5,0,0)"),
              std::string::npos)
        << e->raw;
}

}  // namespace
}  // namespace gpufault
