// What makes an incident and its signature (correlate/correlate.cpp, review cli3): the kernel
// dispatched last before a ROCr-only fault is part of its signature (records without one keep
// their old signature), and a runtime error of a code programs probe for (500 not found, 801 not
// supported: errnames::isProbeResult()) is context of a later fault, never an incident of its
// own. The real binary on real stores.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/correlate/incidents_cli.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

/// signature of each incident, by its first record's file (without directory).
std::map<std::string, std::string> signatures(const std::string& db) {
    auto q = testing::run({GPUFAULT_BIN,
                           "--db",
                           db,
                           "query",
                           "SELECT replace(s.path, rtrim(s.path, replace(s.path, '/', '')), ''), "
                           "i.signature FROM incidents i JOIN evidence e ON e.id = "
                           "i.first_evidence JOIN sources s ON s.id = e.source_id"});
    EXPECT_EQ(q.status, 0) << q.err;
    std::map<std::string, std::string> out;
    std::istringstream in(q.out);
    std::string l;
    std::getline(in, l);  // header
    while (std::getline(in, l)) out[l.substr(0, l.find('\t'))] = l.substr(l.find('\t') + 1);
    return out;
}

TEST(SignatureDispatch, RocrOnlyIncidentsDifferByTheirLastKernel) {
    testing::TempDir t;
    std::string db = t.file("db");
    auto in = testing::run({GPUFAULT_BIN,
                            "--db",
                            db,
                            "ingest",
                            testing::kCorrelateData + "rocr-after-kernel-a.log",
                            testing::kCorrelateData + "rocr-after-kernel-a-again.log",
                            testing::kCorrelateData + "rocr-after-kernel-b.log",
                            testing::kCorrelateData + "rocr-no-dispatch.log",
                            testing::kCorrelateData + "two-processes-one-stream.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto sig = signatures(db);
    ASSERT_EQ(sig.size(), 5u);
    // kernelA twice (two processes, two runs): one bug; kernelB another
    EXPECT_EQ(sig["rocr-after-kernel-a.log"], sig["rocr-after-kernel-a-again.log"]);
    EXPECT_NE(sig["rocr-after-kernel-a.log"], sig["rocr-after-kernel-b.log"]);
    EXPECT_NE(sig["rocr-after-kernel-a.log"], sig["rocr-no-dispatch.log"]);
    // no kernel dispatched, or an ambiguous one: the signature the line had before (vendor,
    // kind, reason only: FNV-1a of "amd|rocr_memory_fault|Page not present or supervisor
    // privilege||;")
    EXPECT_EQ(sig["rocr-no-dispatch.log"], "31eb3090b1fbbadc");
    EXPECT_EQ(sig["two-processes-one-stream.log"], "31eb3090b1fbbadc");
    auto g = testing::run({GPUFAULT_BIN, "--db", db, "groups", "--json"});
    ASSERT_EQ(g.status, 0) << g.err;
    int lines = 0;
    for (char c : g.out) lines += c == '\n';
    EXPECT_EQ(lines, 3);  // {a, a-again}, {b}, {no dispatch, ambiguous}
}

// Real fixture 070: compute-sanitizer reports CUDA_ERROR_NOT_FOUND of the program's
// cuMemGetAddressRange probe (line 7) before the real invalid reads (15, 23, 32) and the 719.
TEST(SignatureDispatch, AProbeResultIsContextOfTheLaterFault) {
    testing::TempDir t;
    std::string db = t.file("db");
    auto in = testing::run({GPUFAULT_BIN,
                            "--db",
                            db,
                            "ingest",
                            GPUFAULT_SOURCE_DIR
                            "/tests/data/real/070-nvidia-h200-sanitizer-wild-read-excerpt.txt"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto q = testing::run({GPUFAULT_BIN,
                           "--db",
                           db,
                           "query",
                           "SELECT m.incident_id, e.line, m.role, m.link FROM incident_evidence m "
                           "JOIN evidence e ON e.id = m.evidence_id ORDER BY e.line"});
    ASSERT_EQ(q.status, 0) << q.err;
    EXPECT_EQ(q.out,
              "incident_id\tline\trole\tlink\n"
              "1\t7\tcontext\tprobe result CUDA_ERROR_NOT_FOUND 8 lines before\n"
              "1\t15\tmember\tfirst\n"
              "1\t23\tmember\tsame 2 MiB region 0x7f78bf400000\n"
              "1\t32\tmember\tsame 2 MiB region 0x7f78bf400000\n"
              "1\t40\tmember\tsame stream, 8 lines apart\n")
        << q.out;
    auto show = testing::run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("Incident 1: sanitizer_report (4 records: "), std::string::npos)
        << show.out;
    EXPECT_NE(show.out.find("\nContext (resets, allocation failures, probe results)\n  #4 "
                            "runtime_error "),
              std::string::npos)
        << show.out;
}

// Probe results alone (500 of cuGetProcAddress, 801 of cuDeviceGetAttribute): records, no
// incident.
TEST(SignatureDispatch, ProbeResultsAloneOpenNoIncident) {
    testing::TempDir t;
    std::string db = t.file("db");
    auto in = testing::run(
        {GPUFAULT_BIN, "--db", db, "ingest", testing::kCorrelateData + "probe-results-only.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto ev = testing::run({GPUFAULT_BIN, "--db", db, "events", "--kind", "runtime_error"});
    EXPECT_NE(ev.out.find("\tCUDA_ERROR_NOT_FOUND\n"), std::string::npos) << ev.out;
    EXPECT_NE(ev.out.find("\tCUDA_ERROR_NOT_SUPPORTED\n"), std::string::npos) << ev.out;
    auto inc = testing::run({GPUFAULT_BIN, "--db", db, "incidents", "--json"});
    ASSERT_EQ(inc.status, 0) << inc.err;
    EXPECT_EQ(inc.out, "");
}

}  // namespace
}  // namespace gpufault
