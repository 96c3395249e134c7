// Capped reads of regular files (collectors/common/small_file.h) on real files: a file, a FIFO
// nobody writes to, a device node, a directory, procfs (size 0), a file over the cap.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "collectors/common/small_file.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

using testing::TempDir;
using testing::writeFile;

TEST(SmallFile, ReadsAWholeRegularFileUpToTheCap) {
    TempDir t;
    std::string text(10000, 'x');
    text += "end\n";
    writeFile(t.file("a"), text);
    EXPECT_EQ(readSmallFile(t.file("a"), 10004), text);
    auto f = RegularFile::open(t.file("a"));
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->st().st_size, 10004);
    auto over = f->read(10003);  // fstat says more: refused before reading
    ASSERT_FALSE(over.has_value());
    EXPECT_EQ(over.error().why, FileError::Why::TooLarge);
    EXPECT_EQ(over.error().size, 10004u);
    EXPECT_EQ(readSmallFile(t.file("a"), 4096).error(),
              t.file("a") + ": larger than 4096 bytes, not read");
    writeFile(t.file("empty"), "");
    EXPECT_EQ(readSmallFile(t.file("empty"), 0), "");
}

TEST(SmallFile, RefusesWhatIsNotARegularFileWithoutWaiting) {
    TempDir t;
    ASSERT_EQ(::mkfifo(t.file("fifo").c_str(), 0600), 0);  // no writer: opening it would block
    EXPECT_EQ(readSmallFile(t.file("fifo"), 4096).error(), t.file("fifo") + ": a FIFO, not read");
    EXPECT_EQ(readSmallFile("/dev/null", 4096).error(), "/dev/null: a character device, not read");
    EXPECT_EQ(readSmallFile(t.path(), 4096).error(), t.path() + ": a directory, not read");
    EXPECT_EQ(readSmallFile(t.file("none"), 4096).error(),
              t.file("none") + ": No such file or directory");
    auto f = RegularFile::open(t.file("fifo"));
    ASSERT_FALSE(f.has_value());
    EXPECT_EQ(f.error().why, FileError::Why::NotRegular);
    EXPECT_STREQ(f.error().kind, "a FIFO");
    EXPECT_EQ(RegularFile::open(t.file("none")).error().err, ENOENT);
}

TEST(SmallFile, ProcfsFilesReportSizeZeroAndAreCappedOnWhatIsRead) {
    auto status = readSmallFile("/proc/self/status", 64 * 1024);
    ASSERT_TRUE(status.has_value()) << status.error();
    EXPECT_TRUE(status->starts_with("Name:\t")) << *status;
    EXPECT_NE(status->find("\nPid:\t"), std::string::npos);
    auto f = RegularFile::open("/proc/self/status");
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->st().st_size, 0);
    auto cut = f->read(10);  // stops one byte past the cap
    ASSERT_FALSE(cut.has_value());
    EXPECT_EQ(cut.error().why, FileError::Why::TooLarge);
    EXPECT_EQ(cut.error().size, 11u);
}

}  // namespace
}  // namespace gpufault
