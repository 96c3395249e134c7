// fileCoreFingerprint() (ingest/core_fingerprint.h) on real files: every byte counts, holes read
// as zeros, so a sparse core and its dense copy are one core and a byte changed anywhere past the
// first pages makes another.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <string>

#include "ingest/core_fingerprint.h"
#include "ingest/ingest_core.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

constexpr size_t kSize = (3u << 20) + 4321;  // 3 MiB and a part block

/// A sparse file of kSize bytes: holes but for `data` at `at` and "end" in its last bytes.
void writeSparse(const std::string& path, const std::string& data, off_t at) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kSize)), 0);
    ASSERT_EQ(::pwrite(fd, data.data(), data.size(), at), static_cast<ssize_t>(data.size()));
    ASSERT_EQ(::pwrite(fd, "end", 3, static_cast<off_t>(kSize - 3)), 3);
    ::close(fd);
}

std::string dense(const std::string& data, size_t at) {
    std::string s(kSize, '\0');
    s.replace(at, data.size(), data);
    s.replace(kSize - 3, 3, "end");
    return s;
}

std::string fp(const std::string& path) {
    auto r = fileCoreFingerprint(path);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : "";
}

TEST(CoreFingerprint, ASparseFileAndItsDenseCopyAreOne) {
    TempDir t;
    const std::string data(5000, 'x');
    writeSparse(t.file("sparse"), data, (1 << 20) + 17);
    writeFile(t.file("dense"), dense(data, (1 << 20) + 17));
    auto a = fp(t.file("sparse"));
    EXPECT_TRUE(a.starts_with("core2-")) << a;
    EXPECT_TRUE(a.ends_with("-" + std::to_string(kSize))) << a;
    EXPECT_EQ(a.size(), std::string("core2-").size() + 16 + 1 + std::to_string(kSize).size());
    EXPECT_EQ(fp(t.file("dense")), a);
}

TEST(CoreFingerprint, AByteChangedAnywhereIsAnotherCore) {
    TempDir t;
    const std::string data(5000, 'x');
    const size_t at = (1 << 20) + 17;
    writeFile(t.file("base"), dense(data, at));
    const auto base = fp(t.file("base"));
    // A zero byte made not zero in a block of zeros, a byte in the data, one in the last part
    // block; the same data one block later (offsets count); one zero more at the end.
    std::string zeroHit = dense(data, at), dataHit = dense(data, at), tailHit = dense(data, at);
    zeroHit[2u << 20] = 1;
    dataHit[at + 4999] = 'y';
    tailHit[kSize - 1] = 'D';
    writeFile(t.file("zero"), zeroHit);
    writeFile(t.file("data"), dataHit);
    writeFile(t.file("tail"), tailHit);
    writeFile(t.file("moved"), dense(data, at + 4096));
    writeFile(t.file("longer"), dense(data, at) + std::string(1, '\0'));
    std::set<std::string> all{base};
    for (const char* name : {"zero", "data", "tail", "moved", "longer"}) {
        auto f = fp(t.file(name));
        EXPECT_TRUE(all.insert(f).second) << name << " " << f;
    }
    EXPECT_EQ(all.size(), 6u);
}

TEST(CoreFingerprint, AMissingFileIsAnErrorNamingIt) {
    TempDir t;
    auto r = fileCoreFingerprint(t.file("nothing"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, t.file("nothing") + ": No such file or directory");
}

// hostile12c HIGH 1: gpufaultd's core worker calls ingestCore on a path a user can swap for a
// FIFO after the scan saw a core: neither it nor the fingerprint blocks on the open (a FIFO
// without a writer would block a plain open() for ever); both say "not a regular file".
TEST(CoreFingerprint, AFifoIsRefusedWithoutBlocking) {
    TempDir t;
    const std::string fifo = t.file("core.7");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto f = fileCoreFingerprint(fifo);
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error().message, fifo + ": not a regular file");
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    auto r = ingestCore(*s, fifo, {}, true);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, fifo + ": not a regular file");
}

}  // namespace
}  // namespace gpufault::testing
