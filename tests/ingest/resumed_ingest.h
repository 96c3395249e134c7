// What a kill leaves and a restart does, without the daemon: StreamIngest over the lines of a
// log into a real store, committed with checkpoints, stopped after a commit and resumed from
// the store's checkpoint.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ingest/stream.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault::testing {

/// The lines of a log (without their '\n') and the byte offset of each.
struct LineLog {
    std::vector<std::string> lines;
    std::vector<int64_t> offsets;  ///< byte offset of each line
    int64_t bytes = 0;             ///< the log's size, a '\n' after every line

    /// Appends line `s` (without its '\n').
    void add(std::string s) {
        offsets.push_back(bytes);
        bytes += static_cast<int64_t>(s.size() + 1);
        lines.push_back(std::move(s));
    }
    /// Appends one launch of pid 4242's HIP thread `tid` as AMD_LOG_LEVEL=3 logs it: its
    /// hipLaunchKernel, Arg0 and ShaderName (kernel_<kernel>) lines at `us`, `us` + 1 and
    /// `us` + 2 µs; Arg0 points at 0x7051e5a00000 + (16·kernel mod 2^20).
    void addDispatch(uint64_t us, const char* tid, int kernel) {
        add(
            fmt::format(":3:hip_module.cpp           :669 : {:010} us: [pid:4242  tid:{}]  "
                        "hipLaunchKernel ( 0x7056a988e9d0, {{1048576,1,1}}, {{256,1,1}}, "
                        "0x70536bbc2fa0, 0, stream:<null> ) ",
                        us,
                        tid));
        add(
            fmt::format(":3:rocvirtual.cpp           :723 : {:010} us: [pid:4242  tid:{}] Arg0:   "
                        "= ptr:0x7051e5a{:05x} obj:[0x7051e5a00000-0x705365a00000]",
                        us + 1,
                        tid,
                        (kernel * 16) & 0xfffff));
        add(
            fmt::format(":3:rocvirtual.cpp           :3016: {:010} us: [pid:4242  tid:{}] "
                        "ShaderName : kernel_{}",
                        us + 2,
                        tid,
                        kernel));
    }
};

/// A real store (store.db in a temporary directory) with one file source, fed from its
/// committed checkpoint on.
struct ResumedStore {
    TempDir dir;
    std::optional<Store> store;
    const SourceIdentity id;
    const int window;  ///< StreamIngest's dispatch window (dispatches per thread)
    /// The committed checkpoint's line after each commit.
    std::vector<int64_t> checkpointLines;

    /// Opens the store; the source is `path` (device 1, inode 2, fingerprint "ab-1").
    ResumedStore(std::string path, int window_dispatches)
        : id{std::move(path), "file", 1, 2, "ab-1"}, window(window_dispatches) {
        auto s = Store::open(dir.file("store.db"), Store::Mode::ReadWrite);
        EXPECT_TRUE(s) << s.error().message;
        store.emplace(std::move(*s));
    }
    /// The source's committed checkpoint (a failure is a test failure and gives the empty
    /// state).
    SourceState state() {
        auto src = store->source(id);
        EXPECT_TRUE(src) << src.error().message;
        return src ? *src : SourceState{};
    }
    /// What one ingest() did: the line it began after (the checkpoint's) and the
    /// held_dispatches rows its checkpoints wrote.
    struct Run {
        int64_t began = 0;
        uint64_t heldRowsWritten = 0;
    };
    /// Lines from the committed checkpoint up to line index `stop` (0-based, exclusive),
    /// committed every `every` lines and at `stop`; finished (complete) at the log's end, the
    /// rest rolled back. `quietAfter`: the stream goes quiet (gpufaultd's flushIdle()) after
    /// that line index. Every failure of the store is a test failure.
    Run ingest(const LineLog& log,
               size_t stop,
               size_t every,
               std::optional<size_t> quietAfter = std::nullopt) {
        SourceState st = state();
        EXPECT_EQ(st.offset, st.line == 0 ? 0 : log.offsets[static_cast<size_t>(st.line)]);
        EXPECT_TRUE(store->begin());
        IngestSummary sum;
        StreamIngest stream(*store, st, window, sum);
        for (size_t i = static_cast<size_t>(st.line); i < stop; ++i) {
            stream.feed(log.lines[i], log.offsets[i], false);
            if (quietAfter == i) stream.flushIdle();
            const bool end = i + 1 == log.lines.size();
            if (end) stream.finish();
            if (end || (i + 1) % every == 0 || i + 1 == stop) {
                int64_t after = i + 1 < log.lines.size() ? log.offsets[i + 1] : log.bytes;
                auto r = stream.checkpoint(after, end, log.bytes);
                EXPECT_TRUE(r) << (r ? "" : r.error().message);
                EXPECT_TRUE(store->commit());
                stream.committed();
                checkpointLines.push_back(stream.state().line);
                if (!end) {
                    EXPECT_TRUE(store->begin());
                }
            }
        }
        (void)store->rollback();
        return {st.line, stream.heldRowsWritten()};
    }
    /// The rows of `sql`, each its columns as text followed by '|' ("a|b|").
    std::vector<std::string> rows(const char* sql) {
        std::vector<std::string> out;
        auto s = store->db().prepare(sql);
        EXPECT_TRUE(s);
        while (s) {
            auto row = s->step();
            if (!row || !*row) break;
            std::string r;
            for (int c = 0; c < s->columns(); ++c) r += s->str(c) + "|";
            out.push_back(std::move(r));
        }
        return out;
    }
    /// The first column of each row of `sql`, as an integer.
    std::vector<int64_t> ints(const char* sql) {
        std::vector<int64_t> out;
        auto s = store->db().prepare(sql);
        EXPECT_TRUE(s);
        while (s) {
            auto row = s->step();
            if (!row || !*row) break;
            out.push_back(s->i64(0));
        }
        return out;
    }
};

}  // namespace gpufault::testing
