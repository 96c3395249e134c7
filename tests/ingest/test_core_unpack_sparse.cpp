// TempFile::write() (ingest/core_unpack.h), where `.zst` cores and apport's CoreDump are unpacked:
// whole 4 KiB blocks of zeros become holes, so a sparse core unpacks sparse (hostile12c: a 20 GiB
// sparse core put ~860 MB of zeros on disk under a 1 GiB cap), and the bytes read back are the
// bytes written. The real fixture core, then 32 MiB of zeros in uneven pieces, then a tail.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "ingest/core_unpack.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kCore = GPUFAULT_SOURCE_DIR "/tests/data/cores/core";

TEST(CoreUnpackSparse, ZeroBlocksAreHolesAndTheBytesReadBackAreTheBytesWritten) {
    TempDir t;
    UnpackLimits lim;
    lim.dir = t.path();
    lim.max_bytes = 64ull << 20;
    auto f = TempFile::create(lim, "core");
    ASSERT_TRUE(f) << f.error().message;
    const std::string core = readFile(kCore);  // 462 848 bytes of a real core
    const std::string zeros((32u << 20) + 1234, '\0');
    std::string expect = core;
    // Uneven pieces: block boundaries fall inside writes, and writes end mid-block.
    for (std::string_view piece :
         {std::string_view(core), std::string_view(zeros).substr(0, 10007),
          std::string_view(zeros).substr(10007, (16u << 20)),
          std::string_view(zeros).substr(10007 + (16u << 20))}) {
        if (piece.data() != core.data()) expect.append(piece);
        ASSERT_TRUE(f->write(piece)) << "piece of " << piece.size();
    }
    const std::string tail = "\x01tail after the zeros";
    expect += tail;
    ASSERT_TRUE(f->write(tail));
    EXPECT_EQ(f->size(), expect.size());

    struct stat st {};
    ASSERT_EQ(::stat(f->path().c_str(), &st), 0);
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), expect.size());
    // The core's own zero pages may be holes too; the 32 MiB of zeros certainly are.
    EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, core.size() + (1u << 20))
        << st.st_blocks << " blocks of 512 bytes";
    EXPECT_EQ(readFile(f->path()), expect);
}

TEST(CoreUnpackSparse, AHoleAtTheEndStillCountsInTheSize) {
    TempDir t;
    UnpackLimits lim;
    lim.dir = t.path();
    auto f = TempFile::create(lim, "core");
    ASSERT_TRUE(f) << f.error().message;
    const std::string core = readFile(kCore);
    ASSERT_TRUE(f->write(core));
    ASSERT_TRUE(f->write(std::string(3 * kHoleBlock, '\0')));
    struct stat st {};
    ASSERT_EQ(::stat(f->path().c_str(), &st), 0);
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), core.size() + 3 * kHoleBlock);
    EXPECT_EQ(readFile(f->path()), core + std::string(3 * kHoleBlock, '\0'));
}

}  // namespace
}  // namespace gpufault::testing
