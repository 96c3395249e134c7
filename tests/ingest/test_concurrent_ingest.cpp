// Two writers of one source (hostile review of gpufaultd, issue 3, HIGH): a second `gpufault
// ingest` of the same file, or gpufaultd and the CLI, both started from the same checkpoint and
// counted every dispatch twice. The checkpoint is a compare-and-swap: the writer that commits
// second is refused, its batch rolled back, and it says so.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "ingest/ingest.h"
#include "ingest/line_reader.h"
#include "ingest/stream.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

/// An AMD_LOG_LEVEL=3 log of `n` launches (ShaderName lines: one dispatch count each) and a
/// ROCr fault after every 1000th (FORMATS.md §1.1, §2.1; ROCm 6.2 prefix).
std::string launches(int n) {
    std::string s;
    for (int i = 0; i < n; ++i) {
        uint64_t us = 1000000000ull + static_cast<uint64_t>(i) * 37;
        s += fmt::format(
            ":3:hip_module.cpp           :669 : {:010} us: [pid:4242  tid:0x7f0a1b2c3d40]  "
            "hipLaunchKernel ( 0x7056a988e9d0, {{1048576,1,1}}, {{256,1,1}}, 0x70536bbc2fa0, 0, "
            "stream:<null> ) \n",
            us);
        s += fmt::format(
            ":3:rocvirtual.cpp           :3016: {:010} us: [pid:4242  tid:0x7f0a1b2c3d40] "
            "ShaderName : Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_K{}\n",
            us + 2,
            i % 7);
        if (i % 1000 == 500)
            s += fmt::format(
                "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on address "
                "0x7f64{:08x}. Reason: Page not present or supervisor privilege.\n",
                i * 0x1000);
    }
    return s;
}

/// sum(n) of dispatch_counts, through the real CLI.
std::string dispatchSum(const std::string& db) {
    auto r = run({GPUFAULT_BIN, "--db", db, "query", "SELECT sum(n) FROM dispatch_counts"});
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
}

/// Feeds the whole file into `store`'s open transaction through a StreamIngest started from
/// `state`, and writes its final checkpoint; the result of checkpoint().
db::Result<void> feedAll(Store& store,
                         const SourceState& state,
                         const std::string& path,
                         bool& conflicted) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    LineReader reader(fd, LineDecoder::kMaxLine);
    IngestSummary sum;
    StreamIngest stream(store, state, 64, sum);
    for (;;) {
        uint64_t off = 0;
        bool truncated = false;
        auto l = reader.next(off, truncated);
        EXPECT_TRUE(l);
        if (!l || !*l) break;
        stream.feed(**l, static_cast<int64_t>(off), truncated);
    }
    stream.finish();
    auto r = stream.checkpoint(st.st_size, true, st.st_size);
    conflicted = stream.conflicted();
    ::close(fd);
    return r;
}

SourceIdentity identityOf(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    SourceIdentity id;
    id.path = path;
    id.device = static_cast<int64_t>(st.st_dev);
    id.inode = static_cast<int64_t>(st.st_ino);
    id.fingerprint = sourceFingerprint(readFile(path).substr(0, 4096));
    return id;
}

TEST(ConcurrentIngest, TheSecondWriterFromOneCheckpointIsRefusedAndStoresNothing) {
    TempDir t;
    const std::string log = t.file("job.log"), db = t.file("s.db");
    writeFile(log, launches(3000));
    auto a = Store::open(db, Store::Mode::ReadWrite);
    auto b = Store::open(db, Store::Mode::ReadWrite);
    ASSERT_TRUE(a && b);
    // Both read the same checkpoint (the start) before either commits.
    auto sa = a->source(identityOf(log));
    auto sb = b->source(identityOf(log));
    ASSERT_TRUE(sa && sb);
    ASSERT_EQ(sa->id, sb->id);

    bool conflicted = true;
    ASSERT_TRUE(a->begin());
    ASSERT_TRUE(feedAll(*a, *sa, log, conflicted));
    EXPECT_FALSE(conflicted);
    ASSERT_TRUE(a->commit());
    const std::string once = dispatchSum(db);
    EXPECT_EQ(once, "sum(n)\n3000\n");

    ASSERT_TRUE(b->begin());
    auto r = feedAll(*b, *sb, log, conflicted);
    ASSERT_FALSE(r);
    EXPECT_TRUE(conflicted);
    EXPECT_EQ(r.error().message, StreamIngest::kConflict);
    ASSERT_TRUE(b->rollback());
    EXPECT_EQ(dispatchSum(db), once);

    // The store holds the first writer's checkpoint: the file is ingested, unchanged.
    auto again = run({GPUFAULT_BIN, "--db", db, "ingest", log});
    EXPECT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(again.out.rfind(log + ": already ingested, unchanged\n", 0), 0u) << again.out;
    EXPECT_EQ(dispatchSum(db), once);
}

TEST(ConcurrentIngest, TwoCliIngestsOfOneFileCountEveryDispatchOnce) {
    TempDir t;
    const std::string log = t.file("job.log");
    writeFile(log, launches(60000));
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("single.db"), "ingest", "-q", log}).status, 0);
    const std::string single = dispatchSum(t.file("single.db"));
    ASSERT_EQ(single, "sum(n)\n60000\n");
    const std::string refused = fmt::format(
        "gpufault: another ingest or gpufaultd is writing source {}; nothing of this batch was "
        "stored\n",
        log);
    writeFile(t.file("other.log"), "starting\n");
    int conflicts = 0;
    for (int i = 0; i < 10; ++i) {
        const std::string db = t.file(fmt::format("p{}.db", i));
        // Every other store is created before: both then read the checkpoint at once (a new
        // one makes the second wait for the first's migrations, which may serialise them).
        if (i % 2 == 1) {
            auto made = run({GPUFAULT_BIN, "--db", db, "ingest", "-q", t.file("other.log")});
            ASSERT_EQ(made.status, 0) << made.err;
        }
        ProcessResult r1, r2;
        std::thread first([&] { r1 = run({GPUFAULT_BIN, "--db", db, "ingest", "-q", log}); });
        r2 = run({GPUFAULT_BIN, "--db", db, "ingest", "-q", log});
        first.join();
        EXPECT_EQ(dispatchSum(db), single) << "run " << i << r1.err << r2.err;
        // Each either completed (one after the other: the second found it unchanged or
        // resumed) or was refused with the message; never both refused.
        for (const auto* r : {&r1, &r2})
            if (r->status != 0) {
                EXPECT_EQ(r->status, 2) << r->err;
                EXPECT_EQ(r->err, refused);
                ++conflicts;
            }
        EXPECT_TRUE(r1.status == 0 || r2.status == 0) << r1.err << r2.err;
    }
    std::fprintf(stderr, "%d of 10 runs refused a writer\n", conflicts);
}

}  // namespace
}  // namespace gpufault::testing
