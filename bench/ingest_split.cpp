// How `gpufault ingest` split its work: ingests LOG into STORE (library call, as the CLI does
// without the correlation) and prints the wall time, the CPU time and how many batches each
// thread classified, page faults and context switches (docs/performance.md, "Seventh round",
// "Tenth round").
// usage: ingest_split [--chunk-kib N] [--batch-lines N] STORE LOG
//   --chunk-kib: KiB of each read buffer (default 4096); --batch-lines: lines a commit (10000)
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <string_view>

#include "ingest/ingest.h"
#include "schema/store.h"

int main(int argc, char** argv) {
    gpufault::IngestOptions opt;
    while (argc >= 5 && std::string_view(argv[1]).starts_with("--")) {
        const std::string_view o = argv[1];
        const uint64_t v = std::strtoull(argv[2], nullptr, 10);
        if (o == "--chunk-kib") {
            opt.read_chunk_bytes = v << 10;
        } else if (o == "--batch-lines") {
            opt.batch_lines = v;
        } else {
            break;
        }
        argv += 2;
        argc -= 2;
    }
    if (argc != 3) {
        fmt::print(stderr, "usage: ingest_split [--chunk-kib N] [--batch-lines N] STORE LOG\n");
        return 2;
    }
    auto store = gpufault::Store::open(argv[1], gpufault::Store::Mode::ReadWrite);
    if (!store) {
        fmt::print(stderr, "{}\n", store.error().message);
        return 1;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto sum = gpufault::ingestFile(*store, argv[2], opt);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!sum) {
        fmt::print(stderr, "{}\n", sum.error().message);
        return 1;
    }
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    const double user = static_cast<double>(ru.ru_utime.tv_sec) + ru.ru_utime.tv_usec / 1e6;
    const double sys = static_cast<double>(ru.ru_stime.tv_sec) + ru.ru_stime.tv_usec / 1e6;
    fmt::print(
        "{} lines, wall {:.2f} s, user {:.2f} s, sys {:.2f} s, {} page faults, {} + {} context "
        "switches (voluntary + not), batches classified by the reading thread {}, by the "
        "matching thread {}\n",
        sum->lines,
        wall,
        user,
        sys,
        ru.ru_minflt + ru.ru_majflt,
        ru.ru_nvcsw,
        ru.ru_nivcsw,
        sum->classified_by_reader,
        sum->classified_by_matcher);
    return 0;
}
