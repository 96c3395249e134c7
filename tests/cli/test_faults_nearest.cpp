// `faults` measures each record's nearest operand in C++ (schema/fault_nearest.cpp), one pass
// over its stream's operands; `show` and the documented view fault_operand_distance answer the
// same question in SQL. On a generated log that exercises every rule (ranks, pids, operands
// after the fault, process boundaries of pid-less ROCr faults, addresses at and above 2^63,
// ties), both must name the same operand for every record. Real binary, real store.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <tuple>

#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

/// name, distance (bytes; null: beyond ±2^63), inside, logged after the fault
using Answer = std::tuple<std::string, nlohmann::json, bool, bool>;

std::string generated(uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return rng() % n; };
    // Two regions 4 GiB wide, one of them above 2^63, so that distances cross the signed range.
    auto addr = [&] {
        uint64_t base = pick(4) == 0 ? 0xffff800000000000ULL : 0x00007f0000000000ULL;
        return base + pick(1ULL << 32) / 4096 * 4096;
    };
    std::string log;
    for (int i = 0; i < 3000; ++i) {
        std::string rank = pick(3) == 0 ? "" : fmt::format("[rank{}]: ", pick(2));
        uint64_t r = pick(100);
        if (r < 2) {  // a ROCr fault (no pid: ends the stream's process)
            log += fmt::format(
                "{}Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on address "
                "0x{:x}. Reason: Page not present or supervisor privilege.\n",
                rank,
                addr() + 8 * pick(512));
        } else if (r < 4) {  // a CPU fault of pid 4528 or 4529
            log += fmt::format(
                "python3[{}]: segfault at {:x} ip 00007f1234567890 sp 00007ffd12345678 error 4 in "
                "libfoo.so[7f1234500000+100000]\n",
                4528 + pick(2),
                addr() + pick(4096));
        } else {
            uint64_t p = addr();
            std::string pid = pick(2) ? fmt::format(" pid={}", 4528 + pick(2)) : "";
            // sizes of a page up to 64 MiB; some operands repeat an earlier one exactly (ties)
            log += fmt::format(
                "{}[probe] name=op{} ptr=0x{:x} size={}{}\n", rank, i, p, 4096ULL << pick(15), pid);
        }
    }
    return log;
}

/// `faults --json`: (source line) → its nearest operand.
std::map<int64_t, Answer> fromFaults(const std::string& db) {
    auto r = run({GPUFAULT_BIN, "--db", db, "faults", "--json"});
    EXPECT_EQ(r.status, 0) << r.err;
    std::map<int64_t, Answer> out;
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) {
        auto j = nlohmann::json::parse(l);
        if (j["nearest_operand"].is_null()) continue;
        out[j["line"].get<int64_t>()] = Answer{j["nearest_operand"].get<std::string>(),
                                               j["nearest_distance"],
                                               j["nearest_inside"].get<bool>(),
                                               j["nearest_after_fault"].get<bool>()};
    }
    return out;
}

/// The same answer from the view: operands after the process start (the last pid-less ROCr
/// fault of the stream and rank before a pid-less record), logged before the fault first, then
/// by |distance| (NULL last), inside first, latest line and id first.
std::map<int64_t, Answer> fromView(const std::string& db) {
    const char* sql =
        "SELECT fault_line, name, distance, inside, after FROM (SELECT v.*, v.rank_in_time IS "
        "NULL AS after, row_number() OVER (PARTITION BY v.evidence_id ORDER BY v.rank_in_time "
        "IS NULL, v.distance IS NULL, CASE WHEN v.distance < 0 THEN -(v.distance + 1) ELSE "
        "v.distance - 1 END, v.inside DESC, v.operand_line DESC, v.operand_id DESC) AS rn FROM "
        "fault_operand_distance v JOIN evidence fe ON fe.id = v.evidence_id WHERE fe.kind IN "
        "('rocr_memory_fault', 'cpu_segfault') AND v.operand_line > ifnull((SELECT max(px.line) "
        "FROM evidence px WHERE px.source_id = fe.source_id AND px.kind = 'rocr_memory_fault' AND "
        "px.pid IS NULL AND px.rank IS fe.rank AND px.line < fe.line AND fe.pid IS NULL), 0)) "
        "WHERE rn = 1";
    auto r = run({GPUFAULT_BIN, "--db", db, "query", "--json", sql}, 120);
    EXPECT_EQ(r.status, 0) << r.err;
    std::map<int64_t, Answer> out;
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) {
        auto j = nlohmann::json::parse(l);
        out[j["fault_line"].get<int64_t>()] = Answer{j["name"].get<std::string>(),
                                                     j["distance"],
                                                     j["inside"].get<int64_t>() != 0,
                                                     j["after"].get<int64_t>() != 0};
    }
    return out;
}

TEST(FaultsNearest, TheListingAndTheViewNameTheSameOperand) {
    for (uint64_t seed : {1u, 2u, 3u}) {
        TempDir t;
        writeFile(t.file("mix.log"), generated(seed));
        auto ing = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", "-q", t.file("mix.log")});
        ASSERT_EQ(ing.status, 0) << ing.err;
        auto listed = fromFaults(t.file("db"));
        auto view = fromView(t.file("db"));
        ASSERT_GT(view.size(), 80u) << "seed " << seed;  // about 120 faults per log
        size_t inside = 0;
        for (const auto& [line, a] : view) inside += std::get<2>(a) ? 1 : 0;
        EXPECT_EQ(listed, view) << "seed " << seed;
        // both answers occur (seeds 1..3: 45-49 inside of 109-127; 0-2 beyond 2^63; 0-1 after)
        EXPECT_GT(inside, view.size() / 5) << "seed " << seed;
        EXPECT_LT(inside, view.size() * 4 / 5) << "seed " << seed;
    }
}

}  // namespace
}  // namespace gpufault::testing
