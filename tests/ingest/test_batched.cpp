// The batched ingest (lines read in batches, classified on either thread, decoded and matched
// in order) against the single-threaded per-line path (StreamIngest::feed, i.e.
// TextPipeline::feedLine) on the same real file: every stored row must agree, whatever the
// batch size; and an ingest stopped right after a checkpoint resumes without loss or duplicates.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ingest/ingest.h"
#include "ingest/line_batches.h"
#include "ingest/line_reader.h"
#include "ingest/stream.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

std::string amd(int level,
                const char* file,
                int srcLine,
                uint64_t us,
                int pid,
                const char* tid,
                const std::string& msg) {
    return fmt::format(":{}:{:<25}:{:<4}: {:010} us: [pid:{:<5} tid:0x{}] {}",
                       level,
                       file,
                       srcLine,
                       us,
                       pid,
                       tid,
                       msg);
}

/// AMD_LOG_LEVEL=3 launches (trace lines to drop, ArgN/ShaderName lines to keep) over two
/// processes and threads, with ROCr faults, a CRI partial line followed by bare AMD lines, CRLF
/// lines, a '\r' progress line, kernel-log and JSON lines, a kmsg record with a continuation,
/// two lines over 1 MiB, and a last line without '\n'. `oneThread`: every launch from one
/// process and thread. `foldedError` false: no JSON runtime-error line (a folded error holds
/// every later checkpoint at its line).
std::string mixedLog(int rounds, bool oneThread = false, bool foldedError = true) {
    std::string s;
    const char* tids[] = {"7f0a1b2c3d40", "7f0a1b2c3e80"};
    for (int i = 0; i < rounds; ++i) {
        const uint64_t us = 1000000000ull + static_cast<uint64_t>(i) * 50;
        const int pid = i % 5 == 4 && !oneThread ? 5151 : 4242;
        const char* tid = tids[oneThread ? 0 : i % 2];
        const std::string eol = i % 11 == 3 ? "\r\n" : "\n";
        s += amd(3,
                 "hip_module.cpp",
                 669,
                 us,
                 pid,
                 tid,
                 " hipLaunchKernel ( 0x7056a988e9d0, {1048576,1,1}, {256,1,1}, 0x70536bbc2fa0, "
                 "0, stream:<null> ) ") +
             eol;
        s += amd(3,
                 "rocvirtual.cpp",
                 723,
                 us + 1,
                 pid,
                 tid,
                 fmt::format("Arg0:   = ptr:0x7051e5a{:05x} obj:[0x7051e5a00000-0x705365a00000]",
                             (i % 4096) * 16)) +
             eol;
        s += amd(3, "rocvirtual.cpp", 723, us + 2, pid, tid, "Arg1:   = val:4096") + "\n";
        s += amd(3,
                 "rocvirtual.cpp",
                 3016,
                 us + 3,
                 pid,
                 tid,
                 fmt::format("ShaderName : Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_SN_K{}", i % 7)) +
             eol;
        s += amd(3,
                 "hip_module.cpp",
                 684,
                 us + 4,
                 pid,
                 tid,
                 "hipLaunchKernel: Returned hipSuccess : ") +
             "\n";
        s += amd(3,
                 "hip_stream.cpp",
                 420,
                 us + 5,
                 pid,
                 tid,
                 "hipStreamQuery: Returned hipErrorNotReady : ") +
             "\n";
        if (i % 9 == 2)
            s += amd(4, "rocdevice.cpp", 1890, us + 6, pid, tid, "short level 4") + "\n";
        if (i % 13 == 5) s += ":3:x.cpp:1: 5 us: [pid:1 tid:0x1] hipFree ( 0x1 ) \n";  // short
        if (i % 17 == 6)
            s += "epoch 3: 45%|####      |\r" +
                 amd(3, "hip_module.cpp", 669, us + 7, pid, tid, "hipMalloc ( 0x1, 8 ) ") + "\n";
        if (i % 97 == 40) {
            // A CRI partial line, then bare AMD lines (trace and kept), then its end.
            s += "2025-06-05T12:40:08.100000000Z stderr P Memory access fault by GPU node-1 "
                 "(Agent handle: 0x55d5b2d4a780) on address ";
            s += "\n";
            s += amd(3,
                     "hip_module.cpp",
                     669,
                     us + 8,
                     pid,
                     tid,
                     " hipLaunchKernel ( 0x1, {1,1,1}, {1,1,1}, 0x0, 0, stream:<null> ) ") +
                 "\n";
            s += amd(3, "rocvirtual.cpp", 3016, us + 9, pid, tid, "ShaderName : after_cri_piece") +
                 "\n";
            s += fmt::format(
                "2025-06-05T12:40:08.200000000Z stderr F 0x7f64{:08x}. Reason: Page "
                "not present or supervisor privilege.\n",
                i * 0x1000);
        }
        if (i % 101 == 70) {
            s += fmt::format(
                "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on address "
                "0x7f64{:08x}. Reason: Page not present or supervisor privilege.\n",
                i * 0x1000);
            s += fmt::format(
                "[dequant_probe] name=W{} shape=(21504, 5376) dtype=torch.bfloat16 "
                "ptr=0x7ef9{:08x} end=0x7efa{:08x}\n",
                i,
                i * 4096,
                i * 4096);
        }
        if (i % 149 == 100) {
            s += fmt::format(
                "[ {}.000001] amdgpu 0000:c1:00.0: amdgpu: [gfxhub0] no-retry page "
                "fault (src_id:0 ring:24 vmid:8 pasid:32772)\n",
                1000 + i);
            s += fmt::format(
                "[ {}.000002] amdgpu 0000:c1:00.0: amdgpu:  Process python3 pid "
                "4242 thread python3 pid 4250\n",
                1000 + i);
            s += fmt::format(
                "[ {}.000003] amdgpu 0000:c1:00.0: amdgpu:   in page starting at "
                "address 0x00007f3a{:08x} from IH client 0x1b (UTCL2)\n",
                1000 + i,
                i * 0x1000);
            s += "6,1234,5678901,-;usb 1-1: new high-speed USB device number 2\n";
            s += " SUBSYSTEM=usb\n";
            if (!oneThread && foldedError)  // a folded runtime error holds every later checkpoint
                s += R"({"log":"hipErrorIllegalAddress: an illegal memory access\n","stream":)"
                     R"("stderr"})"
                     "\n";
        }
        if (i == rounds / 3)  // a trace line over 1 MiB: cut, warned about, then dropped
            s += amd(3,
                     "hip_module.cpp",
                     669,
                     us + 10,
                     pid,
                     tid,
                     "hipLaunchKernel ( " + std::string(1200000, 'x') + " ) ") +
                 "\n";
        if (i == 2 * rounds / 3)
            s += "Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x7f6400001000."
                 " Reason: " +
                 std::string(1100000, 'y') + "\n";
    }
    s += amd(3, "rocvirtual.cpp", 3016, 2000000000ull, 4242, tids[0], "ShaderName : last_line");
    return s;
}

constexpr const char* kCounts =
    "SELECT k.name, c.source_id, c.pid, c.n, c.first_line, c.last_line FROM dispatch_counts c "
    "JOIN kernels k ON k.id = c.kernel_id ORDER BY k.name, c.pid";
constexpr const char* kSources =
    "SELECT id, path, kind, device, inode, fingerprint, size, offset, line, max_line, complete "
    "FROM sources ORDER BY id";

/// Every row the ingest writes, ids included (kernels by name: their ids follow the commits);
/// `withIds` false: without ids, in line order (a resumed ingest may store rows in another order).
std::string dumpRows(Store& s, bool withIds = true) {
    std::string out;
    const std::vector<const char*> exact = {"SELECT * FROM evidence ORDER BY id",
                                            "SELECT d.id, d.source_id, d.line, d.runtime_us, "
                                            "d.pid, d.runtime_tid, k.name FROM dispatches d "
                                            "JOIN kernels k ON k.id = d.kernel_id ORDER BY d.id",
                                            "SELECT * FROM operands ORDER BY id",
                                            "SELECT * FROM warnings ORDER BY id",
                                            kCounts,
                                            "SELECT name FROM kernels ORDER BY name",
                                            kSources};
    const std::vector<const char*> stable = {
        "SELECT line, kind, address, pid, tid, runtime_tid, reason, kernel, count, attrs, raw "
        "FROM evidence ORDER BY line, kind, address",
        "SELECT d.line, d.runtime_us, d.pid, d.runtime_tid, k.name FROM dispatches d JOIN "
        "kernels k ON k.id = d.kernel_id ORDER BY d.line",
        "SELECT o.line, o.pid, o.name, o.ptr, o.end, o.origin, o.runtime_us, d.line FROM "
        "operands o LEFT JOIN dispatches d ON d.id = o.dispatch_id ORDER BY o.line, o.name, "
        "o.ptr",
        "SELECT line, message FROM warnings ORDER BY line, message",
        kCounts,
        "SELECT name FROM kernels ORDER BY name",
        kSources};
    for (const char* sql : withIds ? exact : stable) {
        auto st = s.db().prepare(sql);
        EXPECT_TRUE(st) << sql;
        if (!st) continue;
        out += fmt::format("-- {}\n", sql);
        for (;;) {
            auto row = st->step();
            EXPECT_TRUE(row);
            if (!row || !*row) break;
            for (int c = 0; c < st->columns(); ++c)
                out += st->optStr(c).value_or("NULL") + (c + 1 < st->columns() ? "|" : "\n");
        }
    }
    return out;
}

/// The single-threaded path: every line through StreamIngest::feed() (TextPipeline::feedLine),
/// read with LineReader::next() alone, one transaction, ended as ingestFile() ends a file.
std::string feedPath(const std::string& db, const std::string& path, bool withIds = true) {
    auto store = Store::open(db, Store::Mode::ReadWrite);
    EXPECT_TRUE(store);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    LineReader reader(fd, LineDecoder::kMaxLine);
    SourceIdentity id;
    id.path = path;
    id.device = static_cast<int64_t>(st.st_dev);
    id.inode = static_cast<int64_t>(st.st_ino);
    id.fingerprint = sourceFingerprint(*reader.peek(4096));
    auto state = store->source(id);
    EXPECT_TRUE(state);
    IngestSummary sum;
    EXPECT_TRUE(store->begin());
    {
        StreamIngest stream(*store, *state, 64, sum);
        for (;;) {
            uint64_t off = 0;
            bool truncated = false;
            auto l = reader.next(off, truncated);
            EXPECT_TRUE(l);
            if (!l || !*l) break;
            stream.feed(**l, static_cast<int64_t>(off), truncated, reader.lastUnended());
        }
        // A file may still grow (as ingestFile()): what is unfinished at its end is read again.
        stream.finish(true);
        EXPECT_TRUE(stream.checkpoint(st.st_size, true, st.st_size));
        EXPECT_FALSE(stream.error());
    }
    EXPECT_TRUE(store->commit());
    ::close(fd);
    return dumpRows(*store, withIds);
}

TEST(BatchedIngest, EveryRowAgreesWithFeedLineForAnyBatchSize) {
    TempDir t;
    const std::string log = t.file("mixed.log");
    const std::string text = mixedLog(4000);
    ASSERT_GT(text.size(), LineReader::kChunk);  // lines across read buffers
    writeFile(log, text);
    const std::string expected = feedPath(t.file("feed.db"), log);
    // The file must exercise what the test is about.
    EXPECT_NE(expected.find("line longer than 1048576 bytes"), std::string::npos);
    EXPECT_NE(expected.find("stderr P Memory access fault"), std::string::npos);
    EXPECT_NE(expected.find("after_cri_piece"), std::string::npos);
    EXPECT_NE(expected.find("amdgpu_page_fault"), std::string::npos);
    EXPECT_NE(expected.find("rocr_memory_fault"), std::string::npos);
    EXPECT_NE(expected.find("last_line"), std::string::npos);
    for (uint64_t batch : {1, 7, 2048}) {
        SCOPED_TRACE(fmt::format("batch of {} lines", batch));
        const std::string db = t.file(fmt::format("batched{}.db", batch));
        auto store = Store::open(db, Store::Mode::ReadWrite);
        ASSERT_TRUE(store);
        IngestOptions opt;
        opt.batch_lines = batch;
        auto sum = ingestFile(*store, log, opt);
        ASSERT_TRUE(sum) << sum.error().message;
        EXPECT_EQ(sum->truncated_lines, 2u);
        EXPECT_GT(sum->classified_by_reader + sum->classified_by_matcher, 0u);
        EXPECT_EQ(dumpRows(*store), expected);
    }
}

/// Stage 2 on either side of the channel: the consumer classifies the batch it needs when
/// nobody has claimed it, the producer the ones queued while the queue is full; either way the
/// kept lines are those one classifier finds.
TEST(BatchedIngest, ChannelClaimsAndClassifiesEachBatchOnce) {
    TempDir t;
    const std::string log = t.file("mixed.log");
    writeFile(log, mixedLog(300));
    int fd = ::open(log.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    LineReader reader(fd, LineDecoder::kMaxLine);
    ASSERT_TRUE(reader.peek(4096));  // fills the buffer (ingestFile's fingerprint does)
    BatchChannel channel(2);
    LineClassifier producer, consumer, alone;
    uint64_t seq = 0, line = 1;
    auto next = [&]() -> std::optional<LineBatch> {
        LineBatch b;
        b.first_line = line;
        if (reader.takeBuffered(b.ends, 64, b.base, b.first_offset) == 0) return std::nullopt;
        b.seq = ++seq;
        line += b.lines();
        return b;
    };
    // Three batches through a queue of two: the third push classifies the oldest (producer).
    std::vector<LineBatch> copies;
    for (int i = 0; i < 2; ++i) {
        auto b = next();
        ASSERT_TRUE(b);
        copies.push_back(*b);
        ASSERT_TRUE(channel.push(std::move(*b), producer));
    }
    EXPECT_EQ(channel.classifiedBy(), (std::pair<uint64_t, uint64_t>{0, 0}));
    auto third = next();
    ASSERT_TRUE(third);
    copies.push_back(*third);
    // Full: push() classifies both queued batches, then waits; a consumer pops meanwhile.
    std::thread popper([&] {
        while (channel.classifiedBy().first < 2) std::this_thread::yield();
        auto b = channel.pop(consumer);
        ASSERT_TRUE(b);
        EXPECT_EQ(b->seq, 1u);
    });
    ASSERT_TRUE(channel.push(std::move(*third), producer));
    popper.join();
    EXPECT_EQ(channel.classifiedBy(), (std::pair<uint64_t, uint64_t>{2, 0}));
    // The consumer classifies the third itself (nobody claimed it).
    for (uint64_t want : {2u, 3u}) {
        auto b = channel.pop(consumer);
        ASSERT_TRUE(b);
        EXPECT_EQ(b->seq, want);
        LineBatch& ref = copies[want - 1];
        classify(ref, alone);
        ASSERT_EQ(b->kept.size(), ref.kept.size());
        EXPECT_GT(ref.kept.size(), 0u);
        EXPECT_LT(ref.kept.size(), ref.lines());
        for (size_t k = 0; k < ref.kept.size(); ++k) {
            EXPECT_EQ(b->kept[k].index, ref.kept[k].index);
            EXPECT_EQ(b->kept[k].cls, ref.kept[k].cls);
            EXPECT_EQ(b->kept[k].fixed.text_end, ref.kept[k].fixed.text_end);
            EXPECT_EQ(b->kept[k].fixed.shape.message, ref.kept[k].fixed.shape.message);
        }
    }
    EXPECT_EQ(channel.classifiedBy(), (std::pair<uint64_t, uint64_t>{2, 1}));
    ::close(fd);
}

/// An ingest stopped right after its k-th checkpoint (the process exits there, as after a
/// kill) and run again must leave exactly the store of one clean ingest. With batches of 64
/// lines the checkpoints resume at held dispatches inside batches (either thread may have
/// classified them). Two processes and two runtime threads launch, so a checkpoint lands while
/// one thread's launch is still listing its ArgN lines and others are held: the resume must
/// start at the first ArgN line of either (before, a resume at a held dispatch's ShaderName
/// line lost its ArgN lines, and a stored dispatch then lacked its operands).
TEST(BatchedIngest, StoppedAfterACheckpointResumesInsideABatch) {
    TempDir t;
    const std::string log = t.file("mixed.log");
    writeFile(log, mixedLog(6000, false, false));
    const std::string clean = feedPath(t.file("clean.db"), log, false);
    int insideBatch = 0, stopped = 0;
    const std::string db = t.file("stopped.db");
    for (int k :
         {3, 20, 40, 60, 80}) {  // 3: before the first fault, which writes the first dispatches
        pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            auto store = Store::open(db, Store::Mode::ReadWrite);
            if (!store) ::_exit(2);
            IngestOptions opt;
            opt.batch_lines = 64;
            int calls = 0;
            opt.progress = [&](uint64_t, uint64_t) {
                if (++calls == k) ::_exit(0);
            };
            auto sum = ingestFile(*store, log, opt);
            ::_exit(sum ? 1 : 3);  // 1: finished before the k-th checkpoint
        }
        int st = 0;
        ::waitpid(pid, &st, 0);
        ASSERT_TRUE(WIFEXITED(st));
        ASSERT_NE(WEXITSTATUS(st), 2);
        ASSERT_NE(WEXITSTATUS(st), 3);
        if (WEXITSTATUS(st) != 0) continue;
        ++stopped;
        auto store = Store::open(db, Store::Mode::ReadWrite);
        ASSERT_TRUE(store);
        auto q = store->db().prepare("SELECT line, complete FROM sources");
        ASSERT_TRUE(q);
        auto row = q->step();
        ASSERT_TRUE(row && *row);
        EXPECT_EQ(q->optStr(1).value_or(""), "0");
        if (std::stoll(q->optStr(0).value_or("0")) % 64 != 0) ++insideBatch;
    }
    EXPECT_EQ(stopped, 5);
    EXPECT_GE(insideBatch, 1) << "no checkpoint resumed inside a batch: the test proves nothing";
    auto store = Store::open(db, Store::Mode::ReadWrite);
    ASSERT_TRUE(store);
    auto sum = ingestFile(*store, log, {});
    ASSERT_TRUE(sum) << sum.error().message;
    EXPECT_TRUE(sum->resumed);
    EXPECT_EQ(dumpRows(*store, false), clean);
}

}  // namespace
}  // namespace gpufault::testing
