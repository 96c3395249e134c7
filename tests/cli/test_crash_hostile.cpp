// Hostile crash inputs through the built binary (issues 3/4, the h10 hostile report): a core
// named by a journal entry that is a FIFO, `core.*.zst` files that are not zstd, decompression
// bombs that are not ELF cores, and forged numeric fields. Every input is made here.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/core_ingest.h"
#include "tests/support/crash_files.h"
#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kBoot = "0123456789abcdef0123456789abcdef";

std::vector<nlohmann::json> cores(const TempDir& t) {
    return parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "cores", "--json"}).out);
}

std::vector<std::pair<std::string, std::string>> entry(const std::string& pid) {
    return {{"__CURSOR", "s=" + pid},
            {"_BOOT_ID", kBoot},
            {"MESSAGE_ID", "fc2e22bc6ee647b6b90729ab34a250b1"},
            {"COREDUMP_PID", pid},
            {"COREDUMP_UID", "1000"},
            {"COREDUMP_SIGNAL", "11"},
            {"COREDUMP_TIMESTAMP", "1764491498000000"},
            {"COREDUMP_COMM", "python3"}};
}

TEST(CrashHostile, ExportEntryNamingAFifoIsStoredWithANoteNotRead) {
    TempDir t;
    auto fifo = t.file("core.python3.1000." + kBoot + ".51234.1764491498000000.zst");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto e = entry("51234");
    e.emplace_back("COREDUMP_FILENAME", fifo);
    writeFile(t.file("fifo.export"), exportEntry(e, "Process 51234 (python3) dumped core."));
    // Nobody opens the FIFO for writing: a blocking open would never return.
    auto r = run(coreIngestArgs(t.file("db"), {t.file("fifo.export")}));
    ASSERT_EQ(r.status, 0) << r.err;
    auto c = cores(t);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0]["pid"], 51234);
    EXPECT_EQ(c[0]["note"], "core file not read: " + fifo + ": not a regular file");
}

TEST(CrashHostile, ZstNamedCoreThatIsNotZstdIsAnError) {
    TempDir t;
    auto name = [&](int pid) {
        return t.file("core.crashmain.0." + kBoot + "." + std::to_string(pid) +
                      ".1764491498000000.zst");
    };
    writeFile(name(104), "garbage, not compressed at all\n");
    writeFile(name(105), "");
    // Only a skippable frame (magic 0x184d2a50, 4 bytes of payload): no zstd data frame
    // ("not a zstd frame with data"; a skippable frame before a core's frame is skipped).
    writeFile(name(106),
              std::string("\x50\x2a\x4d\x18\x04\x00\x00\x00"
                          "abcd",
                          12));
    for (int pid : {104, 105, 106}) {
        auto r = run(coreIngestArgs(t.file("db"), {name(pid)}));
        EXPECT_EQ(r.status, 2) << name(pid) << r.out;
        EXPECT_NE(r.err.find(name(pid) + ": not a zstd frame"), std::string::npos) << r.err;
    }
    EXPECT_NE(
        run(coreIngestArgs(t.file("db"), {name(104)})).err.find("the data start with 67 61 72 62"),
        std::string::npos);
    EXPECT_TRUE(cores(t).empty());
}

TEST(CrashHostile, BombsThatAreNotElfCoresStopAtTheFirstBlock) {
    TempDir t;
    ::mkdir(t.file("tmp").c_str(), 0700);
    // 64 MiB of zeros under a 16 MiB cap: read to the end, the cap would be the error; stopped
    // at the first block, the missing ELF magic is.
    auto zst = t.file("core.crashmain.0." + kBoot + ".14046.1764491498000000.zst");
    writeFile(zst, zstdCompress(std::string(64 << 20, '\0')));
    auto crash = t.file("_usr_bin_bomb.0.crash");
    writeFile(crash,
              apportReport(std::string(64 << 20, '\0'),
                           "ProblemType: Crash\nDate: Sun Nov 30 08:31:38 2025\n"
                           "ProcStatus:\n Pid:\t14046\nSignal: 11\n"));
    // An ELF file that is not a core (the test binary itself is ET_DYN or ET_EXEC).
    auto exe = t.file("core.crashmain.0." + kBoot + ".14047.1764491498000000.zst");
    writeFile(exe, zstdCompress(readFile(GPUFAULT_BIN)));
    for (const auto& [file, why] :
         {std::pair{zst,
                    "not an ELF file (no ELF magic at decompressed offset 0); stopped "
                    "after the first block"},
          std::pair{crash,
                    "not an ELF file (no ELF magic at decompressed offset 0); stopped "
                    "after the first block"},
          std::pair{exe, "an ELF file but not a core (e_type is not ET_CORE)"}}) {
        auto r = run({"/usr/bin/env",
                      "TMPDIR=" + t.file("tmp"),
                      GPUFAULT_BIN,
                      "--db",
                      t.file("db"),
                      "ingest",
                      "--max-unpacked-mib",
                      "16",
                      file});
        EXPECT_EQ(r.status, 2) << file << r.out;
        EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find("larger than the cap"), std::string::npos) << r.err;
    }
    EXPECT_EQ(run({"/bin/sh", "-c", "ls -A '" + t.file("tmp") + "' | wc -l"}).out, "0\n");
    EXPECT_TRUE(cores(t).empty());
}

// An export cut inside an entry (no blank line after it, as journalctl ends every entry):
// the entry is stored, but without COREDUMP_FILENAME it is not known whether a core was kept:
// no "size limit" is claimed (hostile review 16, i4 M2), and a warning says where it ends.
TEST(CrashHostile, AnExportCutInsideAnEntryClaimsNoSizeLimit) {
    TempDir t;
    std::string whole = exportEntry(entry("4242"), "whole");
    std::string cut;
    for (const auto& [k, v] : entry("4243")) cut += k + "=" + v + "\n";
    writeFile(t.file("cut.export"), whole + cut);
    auto r = run(coreIngestArgs(t.file("db"), {t.file("cut.export")}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(fmt::format("{}: entry 2 (byte offset {}): the export ends inside this "
                                     "entry (no blank line after it)",
                                     t.file("cut.export"),
                                     whole.size())),
              std::string::npos)
        << r.err;
    auto c = cores(t);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0]["note"],
              "core not kept: size limit, or Storage=none");  // a whole entry without a file
    EXPECT_EQ(c[1]["pid"], 4243);
    EXPECT_EQ(c[1]["note"], "not known whether a core was kept: the export ends inside the entry");
}

TEST(CrashHostile, ForgedNumbersAreUnknownWithAWarningAndDropsSayWhy) {
    TempDir t;
    auto sig = entry("4242");
    for (auto& [k, v] : sig)
        if (k == "COREDUMP_SIGNAL")
            v = "99999";
        else if (k == "COREDUMP_TIMESTAMP")
            v = "18446744073709551615";
    std::string exp = exportEntry(entry("99999999999999999999"), "forged pid") +
                      exportEntry(entry("-5"), "negative pid") + exportEntry(entry("0"), "zero") +
                      exportEntry(entry("4194304"), "PID_MAX_LIMIT itself") +
                      exportEntry(sig, "forged signal and time");
    writeFile(t.file("forged.export"), exp);
    auto r = run(coreIngestArgs(t.file("db"), {t.file("forged.export")}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("5 journal entries, 1 systemd-coredump"), std::string::npos) << r.out;
    for (std::string pid : {"99999999999999999999", "-5", "0", "4194304"})
        EXPECT_NE(
            r.err.find("COREDUMP_PID=" + pid + " is not a pid (1..4194303): crash not stored"),
            std::string::npos)
            << r.err;
    EXPECT_NE(r.err.find(t.file("forged.export") + ": entry 1 (byte offset 0): COREDUMP_PID="),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("entry 5 (byte offset "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("COREDUMP_SIGNAL=99999 is not a signal (1..64): stored as unknown"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("COREDUMP_TIMESTAMP=18446744073709551615 is not a time from 1970 to "
                         "9999 (µs): stored as unknown"),
              std::string::npos)
        << r.err;
    auto c = cores(t);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0]["pid"], 4242);
    EXPECT_TRUE(c[0]["signal"].is_null()) << c[0].dump();
    // Unknown, not 1970 (hostile review 151, LOW 5): null in JSON, said so by `stack`.
    EXPECT_TRUE(c[0]["time"].is_null()) << c[0].dump();
    EXPECT_EQ(c[0]["time_from"], "unknown");
    auto st = run({GPUFAULT_BIN, "--db", t.file("db"), "stack", "1"});
    EXPECT_NE(st.out.find("written at an unknown time"), std::string::npos) << st.out;
    EXPECT_EQ(st.out.find("1970"), std::string::npos) << st.out;

    // apport: the first Pid line is -1, the Signal impossible, the Date past 9999.
    auto crash = t.file("_usr_bin_forged.0.crash");
    writeFile(crash,
              "ProblemType: Crash\nDate: Sun Nov 30 08:31:38 10000\n"
              "ExecutablePath: /usr/bin/forged\nProcStatus:\n Name:\tforged\n Pid:\t-1\n"
              " Pid:\t777\nSignal: 99999\n");
    auto a = run(coreIngestArgs(t.file("db"), {crash}));
    ASSERT_EQ(a.status, 0) << a.err;
    for (std::string w : {"ProcStatus Pid: -1 is not a pid (1..4194303): stored as unknown",
                          "Signal: 99999 is not a signal (1..64): stored as unknown",
                          "Date: Sun Nov 30 08:31:38 10000 is not a date (asctime form, 1970 "
                          "to 9999): the time is unknown"})
        EXPECT_NE(a.err.find("gpufault: warning: " + crash + ": " + w), std::string::npos) << a.err;
    c = cores(t);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[1]["origin"], "apport");
    EXPECT_TRUE(c[1]["signal"].is_null()) << c[1].dump();
    EXPECT_TRUE(c[1]["pid"].is_null()) << c[1].dump();
    EXPECT_EQ(c[1]["time_from"], "unknown") << c[1].dump();
}

TEST(CrashHostile, ExportFieldOver16MiBWarnsWithFileAndOffsetAndTheRestIsRead) {
    // Entry 1's MESSAGE is 17 MiB (binary, as journalctl writes a multi-line value), entry 2's
    // a 17 MiB text line; entry 3 is an ordinary crash after them.
    TempDir t;
    std::string big(17u << 20, 'x');
    std::string e1 = exportEntry(entry("101"), "Stack trace of thread 101:\n" + big);
    auto e2fields = entry("102");
    e2fields.emplace_back("MESSAGE", big);
    std::string e2;
    for (const auto& [k, v] : e2fields) e2 += k + "=" + v + "\n";
    e2 += "\n";
    std::string e3 =
        exportEntry(entry("103"),
                    "Stack trace of thread 103:\n#0  0x00007f3a9c2969fc f (libc.so.6 + "
                    "0x969fc)\n");
    writeFile(t.file("big.export"), e1 + e2 + e3);
    auto r = run(coreIngestArgs(t.file("db"), {t.file("big.export")}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("3 journal entries, 3 systemd-coredump"), std::string::npos) << r.out;
    auto msg1 = e1.find("MESSAGE\n");
    auto msg2 = e1.size() + e2.find("MESSAGE=");
    EXPECT_NE(
        r.err.find(fmt::format("gpufault: warning: {}: entry 1 (byte offset 0): field MESSAGE "
                               "at byte offset {} holds {} bytes, over the 16 MiB cap: left "
                               "out (the entry is read without it)",
                               t.file("big.export"),
                               msg1,
                               big.size() + 27)),
        std::string::npos)
        << r.err.substr(0, 2000);
    EXPECT_NE(
        r.err.find(fmt::format("{}: entry 2 (byte offset {}): field MESSAGE at byte offset {} "
                               "holds {} bytes",
                               t.file("big.export"),
                               e1.size(),
                               msg2,
                               big.size())),
        std::string::npos)
        << r.err.substr(0, 2000);
    auto c = cores(t);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0]["pid"], 101);
    EXPECT_EQ(c[0]["threads"], 0);  // stored from its fields, without the stack text
    EXPECT_EQ(c[1]["pid"], 102);
    EXPECT_EQ(c[2]["pid"], 103);
    EXPECT_EQ(c[2]["top_frame"], "f (libc.so.6 + 0x969fc)");
}

TEST(CrashHostile, StackTextOverTheCapsIsCutAndSaysSo) {
    TempDir t;
    std::string m = "Process 104 (python3) of user 1000 dumped core.\n\n";
    for (int th = 0; th < 1500; ++th) {
        m += "Stack trace of thread " + std::to_string(104 + th) + ":\n";
        for (int k = 0; k < (th == 0 ? 1000 : 1); ++k)
            m += "#" + std::to_string(k) + "  0x00007f3a9c2969fc f (libc.so.6 + 0x969fc)\n";
    }
    writeFile(t.file("many.export"), exportEntry(entry("104"), m));
    auto r = run(coreIngestArgs(t.file("db"), {t.file("many.export")}));
    ASSERT_EQ(r.status, 0) << r.err;
    auto at = t.file("many.export") + ": entry 1 (byte offset 0): ";
    EXPECT_NE(r.err.find(at + "MESSAGE stack trace: 1500 threads: the first 1024 kept"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(at + "MESSAGE stack trace: 1 thread with more than 256 frames (up to "
                              "1000): the first 256 kept"),
              std::string::npos)
        << r.err;
    auto c = cores(t);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0]["threads"], 1024);
    EXPECT_EQ(c[0]["threads_truncated"], true);
    auto s = run({GPUFAULT_BIN, "--db", t.file("db"), "stack", "1", "--json"});
    ASSERT_EQ(s.status, 0) << s.err;
    auto j = nlohmann::json::parse(s.out);
    ASSERT_FALSE(j["stacks"].empty()) << s.out.substr(0, 500);
    EXPECT_EQ(j["stacks"][0]["frames"].size(), 256u);
    EXPECT_EQ(j["stacks"][0]["frames_truncated"], true);
}

TEST(CrashHostile, ExportEntryNotAttestedByJournaldWarnsAndIsUntrusted) {
    // Anyone can write a file of entries (or `logger` one with systemd-coredump's MESSAGE_ID):
    // gpufaultd drops entries without _UID=0 and systemd-coredump's comm/identifier; from a
    // file they are stored, with a warning, as untrusted.
    TempDir t;
    auto forged = entry("105");
    forged.emplace_back("_UID", "1000");
    forged.emplace_back("_COMM", "bash");
    auto real = entry("106");
    real.emplace_back("_UID", "0");
    real.emplace_back("_COMM", "systemd-coredum");
    writeFile(t.file("mixed.export"),
              exportEntry(forged, "forged") + exportEntry(entry("107"), "no trusted fields") +
                  exportEntry(real, "Process 106 (python3) dumped core."));
    auto r = run(coreIngestArgs(t.file("db"), {t.file("mixed.export")}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(
        r.err.find(t.file("mixed.export") +
                   ": entry 1 (byte offset 0): not attested as systemd-coredump's (_UID=1000, "
                   "_COMM=bash, SYSLOG_IDENTIFIER=(none); gpufaultd ignores such entries): "
                   "stored with origin 'systemd-coredump (untrusted)'"),
        std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("entry 2 (byte offset "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("(_UID=(none), _COMM=(none), SYSLOG_IDENTIFIER=(none);"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("entry 3 "), std::string::npos) << r.err;
    auto c = cores(t);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0]["origin"], "systemd-coredump (untrusted)");
    EXPECT_EQ(c[1]["origin"], "systemd-coredump (untrusted)");
    EXPECT_EQ(c[2]["origin"], "systemd-coredump");
    auto ev = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json"}).out);
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0]["attrs"]["origin"], "systemd-coredump (untrusted)") << ev[0].dump();
}

TEST(CrashHostile, CutApportCoreDumpNamesTheLineWhereItsDataStop) {
    // Fields after CoreDump: the file goes on, the core's data stop at its last chunk line.
    TempDir t;
    std::string fields =
        "ProblemType: Crash\nDate: Sun Nov 30 08:31:38 2025\nProcStatus:\n Pid:\t14046\n"
        "Signal: 11\n";
    std::string rep = apportReport(std::string(1 << 20, 'c'), fields, true);
    auto lastCore = std::count(rep.begin(), rep.end(), '\n');
    rep += "Uname: Linux 6.8.0 x86_64\nUserGroups: N/A\n";
    writeFile(t.file("_usr_bin_cut.0.crash"), rep);
    auto r = run(coreIngestArgs(t.file("db"), {t.file("_usr_bin_cut.0.crash")}));
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.err.find(fmt::format("{}: line {}: CoreDump: the compressed data end early (cut "
                                     "report); CoreDump is lines 7-{} of {}",
                                     t.file("_usr_bin_cut.0.crash"),
                                     lastCore,
                                     lastCore,
                                     lastCore + 2)),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(cores(t).empty());
}

/// The real H200 CUDA GPU core with the section header field at `field` (24: sh_offset, 32:
/// sh_size) of the first section whose name starts with `prefix` set to `v`.
std::string mutatedCudaCore(const TempDir& t, std::string_view prefix, size_t field, uint64_t v) {
    auto path = t.file("orig.nvcudmp");
    auto unz = run(
        {"/bin/sh",
         "-c",
         "gzip -dc '" + kCoreDir + "cuda-h200/gpucore.illegal_probe.nvcudmp.gz' > '" + path + "'"});
    EXPECT_EQ(unz.status, 0) << unz.err;
    auto d = readFile(path);
    auto u64 = [&](size_t o) {
        uint64_t x = 0;
        std::memcpy(&x, d.data() + o, 8);
        return x;
    };
    auto u16 = [&](size_t o) { return static_cast<uint16_t>(u64(o) & 0xffff); };
    uint64_t shoff = u64(0x28), strtab = u64(shoff + u16(0x3e) * 64u + 24);
    for (uint16_t i = 0; i < u16(0x3c); ++i) {
        uint64_t h = shoff + i * 64u;
        if (std::string_view(d.c_str() + strtab + (u64(h) & 0xffffffff)).starts_with(prefix)) {
            std::memcpy(d.data() + h + field, &v, 8);
            return d;
        }
    }
    ADD_FAILURE() << "no section " << prefix;
    return d;
}

TEST(CrashHostile, CudaSectionsPastTheFileOrWrappingAreErrors) {
    TempDir t;
    struct Case {
        std::string_view section;
        size_t field;
        uint64_t value;
        std::string why;
    };
    for (const auto& c : std::vector<Case>{
             {".cudbg.global.", 32, 1ull << 63, "size 0x8000000000000000 lie past the end"},
             {".cudbg.param.", 32, ~0ull, "size 0xffffffffffffffff lie past the end"},
             {".cudbg.global.", 24, ~0ull - 10, "offset 0xfffffffffffffff5 size"},
             {".cudbg.param.", 24, 1ull << 40, "offset 0x10000000000 size 0x"},
             {".cudbg.global.", 16, ~0ull - 0xfff, "address 0xfffffffffffff000 + size 0x"}}) {
        auto core = t.file("core_1796026266_h200_490.nvcudmp");
        writeFile(core, mutatedCudaCore(t, c.section, c.field, c.value));
        auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", core});
        EXPECT_EQ(r.status, 2) << c.section << " " << c.value << r.out;
        EXPECT_NE(r.err.find(core + ": section "), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(std::string(c.section)), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(c.why), std::string::npos) << r.err;
    }
    EXPECT_TRUE(cores(t).empty());
    auto ops = run({GPUFAULT_BIN, "--db", t.file("db"), "operands", "--json"});
    EXPECT_EQ(ops.out, "");
}

// `ingest`'s own lines carry file names and values read from inputs anyone may write
// (/var/crash is 1777): none of their bytes reaches the terminal raw (hostile review 16, H2).
TEST(CliCrashHostile, IngestPrintsFileNamesWithoutTheirControlBytes) {
    TempDir t;
    std::string name = t.file("job\x1b]0;PWNED\a\x1b[2J.log");
    writeFile(name,
              "Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x7f0000001000. "
              "Reason: Page not present or supervisor privilege.\n");
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", name});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('\a'), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("job\\x1b]0;PWNED\\x07\\x1b[2J.log: 1 line, 1 evidence"),
              std::string::npos)
        << r.out;
}

// An executable or library given where a core was meant is said to be one (exit 2), not read
// as a log of 0 records; a missing `--exe` is a usage error naming it (hostile review 16, M3 M4).
TEST(CliCrashHostile, AnElfThatIsNotACoreAndAMissingExeAreRefused) {
    TempDir t;
    auto exe = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", kCoreDir + "crashmain"});
    EXPECT_EQ(exe.status, 2);
    EXPECT_NE(exe.err.find("crashmain: a shared object or PIE executable (ELF e_type 3), not a "
                           "core"),
              std::string::npos)
        << exe.err;
    writeFile(t.file("cut"),
              std::string("\x7f"
                          "ELF\x02\x01",
                          6));
    auto cut = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("cut")});
    EXPECT_EQ(cut.status, 2);
    EXPECT_NE(cut.err.find("a cut ELF header (6 bytes): not a core"), std::string::npos) << cut.err;
    auto missing = run(
        {GPUFAULT_BIN, "--db", t.file("db"), "ingest", "--exe", t.file("nope"), kCoreDir + "core"});
    EXPECT_EQ(missing.status, 2);
    EXPECT_NE(missing.err.find("--exe " + t.file("nope") + ": No such file or directory"),
              std::string::npos)
        << missing.err;
    auto q = run({GPUFAULT_BIN, "--db", t.file("db"), "query", "select count(*) from sources"});
    EXPECT_NE(q.out.find("\n0\n"), std::string::npos) << q.out;
}

// A ShaderName, an operand name and a comm holding ESC sequences (clear screen, an OSC 8 link):
// `show` prints none of their bytes raw, the last ShaderName included (hostile review 16, i2 H1).
TEST(CliCrashHostile, ShowPrintsNoControlByteOfTheNamesALogGives) {
    TempDir t;
    auto in = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", "-q",
                   GPUFAULT_SOURCE_DIR "/tests/data/hostile/escapes-in-names.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto show = run({GPUFAULT_BIN, "--db", t.file("db"), "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_EQ(show.out.find('\x1b'), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("last ShaderName  _Z3foo\\x1b[2J\\x1b]8;;http://evil/"),
              std::string::npos)
        << show.out;
}

// A shim's file named for pid 5000 whose records claim pid 6666: refused, as gpufaultd refuses
// them (a file counts only for the pid its name gives; hostile review 16, i4 H3).
TEST(CliCrashHostile, AllocationRecordsOfAnotherPidThanTheFileNameAreRefused) {
    TempDir t;
    auto in = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest",
                   GPUFAULT_SOURCE_DIR
                   "/tests/data/hostile/gpufault-alloc.5000.4026531836.100.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_NE(in.err.find(".100.log:2: record of pid 6666 in the file of pid 5000: refused"),
              std::string::npos)
        << in.err;
    auto q = run({GPUFAULT_BIN, "--db", t.file("db"), "query",
                  "select count(*) from allocations"});
    ASSERT_EQ(q.status, 0) << q.err;
    EXPECT_NE(q.out.find("\n0\n"), std::string::npos) << q.out;
}

// A log ingested while it was written, cut inside a line of an amdgpu block, then ingested
// again whole: the block is read again from its header and stays one record (the cut line
// ended it, so the resume began at the cut line and its rest made a second, header-less
// record; hostile review 16, i2 H2). Cuts inside the address, status and client lines.
TEST(CliCrashHostile, ABlockCutInsideALineIsOneRecordOnceTheFileIsWhole) {
    const std::string src =
        readFile(GPUFAULT_SOURCE_DIR "/tests/data/hostile/amdgpu-block-then-rocr.log");
    auto events = [](const std::string& db) {
        auto r = run({GPUFAULT_BIN, "--db", db, "events", "--json"});
        EXPECT_EQ(r.status, 0) << r.err;
        std::vector<std::string> out;
        std::istringstream in(r.out);
        for (std::string l; std::getline(in, l);) {
            auto j = nlohmann::json::parse(l);
            j.erase("id");
            j.erase("source");  // each store its own directory
            out.push_back(j.dump());
        }
        std::sort(out.begin(), out.end());
        return out;
    };
    TempDir ref;
    writeFile(ref.file("job.log"), src);
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", ref.file("db"), "ingest", "-q", ref.file("job.log")})
                  .status,
              0);
    const auto want = events(ref.file("db"));
    ASSERT_EQ(want.size(), 3u);
    for (const char* inside : {"address 0x00007f00", "STATUS:0x008", "client ID: TC"}) {
        size_t cut = src.find(inside);
        ASSERT_NE(cut, std::string::npos) << inside;
        cut += std::strlen(inside);
        TempDir t;
        writeFile(t.file("job.log"), src.substr(0, cut));
        ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", "-q", t.file("job.log")})
                      .status,
                  0);
        writeFile(t.file("job.log"), src);
        ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", "-q", t.file("job.log")})
                      .status,
                  0);
        EXPECT_EQ(events(t.file("db")), want) << "cut after '" << inside << "'";
    }
}

// Text a log or a store gives: C1 controls (U+009B is CSI to a UTF-8 terminal), bidirectional
// overrides and bytes that are not UTF-8 are escaped; other UTF-8 passes (hostile review 16,
// i2 M1); a timeout of NaN is refused, not taken as no timeout (i3 M5).
TEST(CliCrashHostile, TablesEscapeC1ControlsBidiOverridesAndNonUtf8Bytes) {
    TempDir t;
    writeFile(t.file("x.log"), "nothing\n");
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", "-q", t.file("x.log")}).status, 0);
    auto q = run({GPUFAULT_BIN, "--db", t.file("db"), "query",
                  "select cast(x'61c29b5b324a62e280ae6576696cff20c3a9' as text) as v"});
    ASSERT_EQ(q.status, 0) << q.err;
    EXPECT_EQ(q.out, "v\na\\u009b[2Jb\\u202eevil\\xff \xc3\xa9\n");
    auto nan = run({GPUFAULT_BIN, "--db", t.file("db"), "query", "--timeout", "nan", "select 1"});
    EXPECT_EQ(nan.status, 2);
    EXPECT_NE(nan.err.find("--timeout: not a finite number: nan"), std::string::npos) << nan.err;
}

}  // namespace
}  // namespace gpufault::testing
