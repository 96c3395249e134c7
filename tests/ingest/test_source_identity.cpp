// fileSource (ingest/source_identity.cpp): which stored source `gpufault ingest` continues, on a
// real store and real files.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "ingest/ingest.h"
#include "ingest/source_identity.h"
#include "ingest/stream.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

std::string stepLines(int from, int to) {
    std::string s;
    for (int i = from; i < to; ++i) s += fmt::format("step {} loss {:.3f}\n", i, 1.0 / i);
    return s;
}

// Issue 3 (ing3b): an ingest takes the file's size, then reads the source's row; another reader
// of the growing file (gpufaultd) may commit a checkpoint past that size in between. Compared
// with the size taken before, the file looked cut short: its stream was retired and every line
// stored again in a new source.
TEST(FileSource, ACheckpointCommittedPastTheSizeTakenBeforeIsTheSameFile) {
    TempDir dir;
    const std::string log = dir.file("job.log");
    writeFile(log, stepLines(1, 50));
    struct stat before {};
    ASSERT_EQ(::stat(log.c_str(), &before), 0);
    // The other reader: the file grew and it read to its end.
    writeFile(log, stepLines(1, 120));
    auto store = Store::open(dir.file("store.db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(store) << store.error().message;
    auto other = ingestFile(*store, log, {});
    ASSERT_TRUE(other) << other.error().message;
    struct stat now {};
    ASSERT_EQ(::stat(log.c_str(), &now), 0);

    int fd = ::open(log.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    char head[4096];
    ssize_t n = ::pread(fd, head, sizeof head, 0);
    ASSERT_GT(n, 0);
    SourceIdentity id;
    id.path = log;
    id.device = static_cast<int64_t>(now.st_dev);
    id.inode = static_cast<int64_t>(now.st_ino);
    id.fingerprint = sourceFingerprint(std::string_view(head, static_cast<size_t>(n)));
    FilePrefix prefix(fd);
    auto src = fileSource(*store, id, static_cast<int64_t>(before.st_size), prefix);
    ::close(fd);
    ASSERT_TRUE(src) << src.error().message;
    EXPECT_EQ(src->replaced, 0) << "the stream was retired as if the file had been cut short";
    EXPECT_EQ(src->state.id, other->source_id);
    EXPECT_EQ(src->state.offset, static_cast<int64_t>(now.st_size));
    EXPECT_EQ(src->state.line, 119);
    EXPECT_EQ(src->size, static_cast<int64_t>(now.st_size));
    EXPECT_TRUE(src->unchanged);
}

/// The path the store keeps for the source `id`.
std::string storedPath(Store& store, int64_t id) {
    auto s = store.db().prepare("SELECT path FROM sources WHERE id = ?1");
    EXPECT_TRUE(s);
    s->bind(1, id);
    auto row = s->step();
    return row && *row ? s->str(0) : std::string("(none)");
}

// A file read again under another name keeps the name it was stored under while that name
// still is the file (a hard link; a relative path beside gpufaultd's absolute one: hostile
// reviews 16, i2 M7 and i3 M3); a file renamed away from it takes the new name.
TEST(FileSource, AnotherNameOfTheSameFileKeepsTheStoredPathARenameTakesTheNew) {
    TempDir dir;
    const std::string a = dir.file("a.log"), b = dir.file("b.log"), c = dir.file("c.log");
    writeFile(a, stepLines(1, 10));
    auto store = Store::open(dir.file("store.db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(store) << store.error().message;
    auto first = ingestFile(*store, a, {});
    ASSERT_TRUE(first) << first.error().message;
    ASSERT_EQ(::link(a.c_str(), b.c_str()), 0);
    writeFile(b, stepLines(1, 20));  // the same inode, grown
    auto linked = ingestFile(*store, b, {});
    ASSERT_TRUE(linked) << linked.error().message;
    EXPECT_EQ(linked->source_id, first->source_id);
    EXPECT_EQ(storedPath(*store, first->source_id), a);
    ASSERT_EQ(::unlink(a.c_str()), 0);
    ASSERT_EQ(::rename(b.c_str(), c.c_str()), 0);
    writeFile(c, stepLines(1, 30));
    auto moved = ingestFile(*store, c, {});
    ASSERT_TRUE(moved) << moved.error().message;
    EXPECT_EQ(moved->source_id, first->source_id);
    EXPECT_EQ(storedPath(*store, first->source_id), c);
}

}  // namespace
}  // namespace gpufault::testing
