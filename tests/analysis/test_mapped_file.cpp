// MappedFile (analysis/mapped_file.h) on real files cut short while mapped: a user may truncate
// their own library while gpufaultd (root) inventories it for a diagnosis; that must not end
// the process with SIGBUS.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "analysis/mapped_file.h"
#include "tests/support/process.h"

using namespace gpufault;

namespace {

/// A file of `size` bytes of 'x'.
std::string fileOf(const gpufault::testing::TempDir& dir, const std::string& name, size_t size) {
    auto path = dir.file(name);
    std::string bytes(size, 'x');
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
    return path;
}

}  // namespace

TEST(MappedFile, AFileCutShortWhileMappedReadsZerosPastItsEndAndSaysSo) {
    gpufault::testing::TempDir dir;
    auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    auto path = fileOf(dir, "lib.so", 3 * page);
    MappedFile m;
    ASSERT_EQ(m.open(path), "");
    ASSERT_EQ(m.bytes().size(), 3 * page);
    EXPECT_EQ(static_cast<char>(m.bytes()[2 * page + 5]), 'x');
    EXPECT_FALSE(m.shrank());
    ASSERT_EQ(::truncate(path.c_str(), 100), 0);                  // its owner cuts it short
    EXPECT_EQ(static_cast<char>(m.bytes()[50]), 'x');             // still in the file
    EXPECT_EQ(static_cast<char>(m.bytes()[2 * page + 5]), '\0');  // past the end: no SIGBUS
    EXPECT_EQ(static_cast<char>(m.bytes()[page]), '\0');
    EXPECT_TRUE(m.shrank());
    // Another mapping of another file is not marked.
    MappedFile other;
    ASSERT_EQ(other.open(fileOf(dir, "other.so", page)), "");
    EXPECT_EQ(static_cast<char>(other.bytes()[0]), 'x');
    EXPECT_FALSE(other.shrank());
}

TEST(MappedFile, ASigbusOutsideItsMappingsStillEndsTheProcess) {
    gpufault::testing::TempDir dir;
    auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    auto guarded = fileOf(dir, "guarded.so", page);
    auto plain = fileOf(dir, "plain.bin", 2 * page);
    EXPECT_EXIT(
        {
            MappedFile m;  // installs the handler
            if (!m.open(guarded).empty()) ::_exit(3);
            int fd = ::open(plain.c_str(), O_RDONLY | O_CLOEXEC);
            auto* p = static_cast<volatile char*>(
                ::mmap(nullptr, 2 * page, PROT_READ, MAP_PRIVATE, fd, 0));
            if (::truncate(plain.c_str(), 0) != 0) ::_exit(4);
            char c = p[page];  // a mapping of someone else's: SIGBUS as before
            ::_exit(c == 0 ? 5 : 6);
        },
        ::testing::KilledBySignal(SIGBUS),
        "");
}
