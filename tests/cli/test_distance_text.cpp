// How `faults`, `show` and `report` word a distance above an operand's end (newuser11): the
// first byte past a buffer, the classic off-by-one, is "+0 B above end (the first byte past
// it)"; compute-sanitizer's own text counts that byte as "1 bytes after". Real H200 run 071.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string k071 =
    GPUFAULT_SOURCE_DIR "/tests/data/real/071-nvidia-h200-sanitizer-off-by-one-write.txt";

TEST(DistanceText, TheFirstBytePastABufferIsNamedSoInFaultsShowAndReport) {
    TempDir t;
    const std::string db = t.file("db");
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", k071}).status, 0);
    auto f = run({GPUFAULT_BIN, "--db", db, "faults"});
    EXPECT_NE(f.out.find("\tB\t+0 B above end (the first byte past it)\t"), std::string::npos)
        << f.out;
    // No dispatch was logged: LAST KERNEL is the kernel the sanitizer names.
    EXPECT_NE(f.out.find("\tforensics::off_by_one_write_kernel\n"), std::string::npos) << f.out;
    auto i = run({GPUFAULT_BIN, "--db", db, "incidents"});  // a file:line, not a time
    EXPECT_NE(i.out.find("\tFIRST RECORD\t"), std::string::npos) << i.out;
    // line 14, the invalid write: line 6's CUDA_ERROR_NOT_FOUND of the program's
    // cuMemGetAddressRange probe is context, not the record that opens it (review cli3)
    EXPECT_NE(i.out.find("071-nvidia-h200-sanitizer-off-by-one-write.txt:14\t"), std::string::npos)
        << i.out;
    auto s = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    EXPECT_NE(s.out.find("4,000 B (3.91 KiB)\t+0 B above end (the first byte past it)\tyes"),
              std::string::npos)
        << s.out;
    // Other distances keep their sign and unit.
    EXPECT_NE(s.out.find("128 B\t+4,384 B (+4.28 KiB) above end\tyes"), std::string::npos) << s.out;
    auto r = run({GPUFAULT_BIN, "--db", db, "report", "1"});
    EXPECT_NE(r.out.find("| 4000 | 0 above end (the first byte past it) | 0 B |"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("1 bytes after"), std::string::npos) << r.out;  // the sanitizer's words
}

}  // namespace
}  // namespace gpufault::testing
