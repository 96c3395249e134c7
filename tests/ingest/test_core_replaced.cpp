// Hostile review 148, HIGH 1: a core replaced (renamed over) or rewritten while ingestCore reads
// it. Every read goes through the one descriptor opened first, so the core stored is the file
// opened, whole; a file changed in place meanwhile is not stored. The swap is made at a fixed
// point (CoreIngestHooks::after_open: the file open, its identity read, nothing else yet).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "collectors/coredump/core_reader.h"
#include "ingest/core_fingerprint.h"
#include "ingest/ingest_core.h"
#include "schema/core_queries.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kA = GPUFAULT_SOURCE_DIR "/tests/data/cores/core";
const std::string kB = GPUFAULT_SOURCE_DIR "/tests/data/cores/nobuildid/core";

int64_t pidOf(const std::string& core) {
    auto r = coredump::readCore(core);
    EXPECT_TRUE(r) << r.error().message;
    return r ? r->layout.notes.pid.value_or(0) : 0;
}

TEST(CoreReplaced, ACoreRenamedOverAfterTheOpenIsStoredAsTheFileOpened) {
    TempDir t;
    const std::string core = t.file("core");
    std::filesystem::copy_file(kA, core);
    std::filesystem::copy_file(kB, t.file("B"));
    std::filesystem::copy_file(kA, t.file("A.copy"));
    std::filesystem::copy_file(kB, t.file("B.copy"));
    const int64_t pidA = pidOf(kA), pidB = pidOf(kB);
    ASSERT_NE(pidA, pidB);
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    CoreIngestHooks hooks;
    hooks.after_open = [&] { ASSERT_EQ(std::rename(t.file("B").c_str(), core.c_str()), 0); };
    auto r = ingestCore(*s, core, {}, true, hooks);
    ASSERT_TRUE(r) << r.error().message;
    auto cores = queryCores(s->db());
    ASSERT_TRUE(cores) << cores.error().message;
    ASSERT_EQ(cores->size(), 1u);
    const auto& c = cores->front().core;
    // A's pid, size and content: not B's pid with A's fingerprint (mixed), nor B's content
    // under A's identity.
    EXPECT_EQ(c.pid.value_or(0), pidA);
    EXPECT_EQ(c.size, static_cast<int64_t>(std::filesystem::file_size(kA)));
    auto fpA = fileCoreFingerprint(kA);
    ASSERT_TRUE(fpA);
    auto byA = queryCoreByFingerprint(s->db(), *fpA);
    ASSERT_TRUE(byA) << byA.error().message;
    ASSERT_TRUE(*byA) << "the core stored has not A's content fingerprint";
    EXPECT_EQ((*byA)->first, cores->front().id);
    // A copy of A is that core; B (now at the path, and a copy of it) is another crash.
    auto a = ingestCore(*s, t.file("A.copy"));
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_TRUE(a->same_as) << "a copy of A stored again";
    auto b = ingestCore(*s, core);
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_FALSE(b->same_as) << *b->same_as;
    EXPECT_FALSE(b->unchanged);
    auto b2 = ingestCore(*s, t.file("B.copy"));
    ASSERT_TRUE(b2) << b2.error().message;
    EXPECT_TRUE(b2->same_as);
    cores = queryCores(s->db());
    ASSERT_TRUE(cores);
    ASSERT_EQ(cores->size(), 2u);
    EXPECT_EQ(cores->at(1).core.pid.value_or(0), pidB);
}

TEST(CoreReplaced, ACoreWrittenToWhileReadIsNotStored) {
    TempDir t;
    const std::string core = t.file("core");
    std::filesystem::copy_file(kA, core);
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    CoreIngestHooks hooks;
    hooks.after_open = [&] {  // the writer is not done: one more page
        FILE* f = std::fopen(core.c_str(), "ab");
        ASSERT_NE(f, nullptr);
        std::string page(4096, '\x7');
        std::fwrite(page.data(), 1, page.size(), f);
        std::fclose(f);
    };
    auto r = ingestCore(*s, core, {}, true, hooks);
    ASSERT_FALSE(r) << "stored a core that changed while read";
    EXPECT_NE(r.error().message.find("changed while read"), std::string::npos) << r.error().message;
    EXPECT_TRUE(r.error().message.starts_with(core + ": ")) << r.error().message;
    auto cores = queryCores(s->db());
    ASSERT_TRUE(cores);
    EXPECT_TRUE(cores->empty());
    // Once the writer is done it is stored.
    auto again = ingestCore(*s, core);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_GT(again->core_id, 0);
}

}  // namespace
}  // namespace gpufault::testing
