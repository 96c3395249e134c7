// report --format md on hostile log text, through the built binary: a ShaderName with backticks
// and HTML, an operand name with `|`, a ROCr reason with a ``` run and <script>. The Markdown
// must keep its structure (CommonMark code spans and fences, GFM table rows) and carry no raw
// HTML outside code.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

// The lines of the producers' formats (HIP AMD_LOG_LEVEL 3 Arg/ShaderName, FORMATS.md §3;
// ROCr `Memory access fault by GPU node-%u (Agent handle: %p) on address %p. Reason: %s`, §2.1;
// an operand probe line), with hostile values.
const char* const kLog =
    ":3:rocvirtual.cpp           :723 : 4815821610388 us: [pid:24 tid:0x7053] Arg2:   = "
    "ptr:0x7051e5a00000 obj:[0x7051e5a00000-0x7051e5b00000]\n"
    ":3:rocvirtual.cpp           :3016: 4815821610391 us: [pid:24 tid:0x7053] ShaderName : "
    "_Z3fooI`|x|`<img src=x onerror=alert(1)>EvPf\n"
    "Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x7051e5c00000. Reason: "
    "``` </details> | a | b | <script>alert(1)</script>\n"
    "[probe] name=a|b`c<i>x</i> ptr=0x7051e5c10000 end=0x7051e5c20000\n";

std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < s.size()) {
        size_t e = s.find('\n', start);
        if (e == std::string::npos) e = s.size();
        out.push_back(s.substr(start, e - start));
        start = e + 1;
    }
    return out;
}

size_t runAt(const std::string& s, size_t i) {
    size_t j = i;
    while (j < s.size() && s[j] == '`') ++j;
    return j - i;
}

/// A fence line: a backtick run of 3 or more and nothing else (the report writes no info string).
size_t fenceLen(const std::string& l) {
    size_t n = runAt(l, 0);
    return n >= 3 && n == l.size() ? n : 0;
}

/// The text outside fenced blocks and code spans (CommonMark: a span ends at the next backtick
/// run of the same length; an escaped backtick opens none). Sets `*fences_ok` false when a fence
/// opened is never closed.
std::string outsideCode(const std::string& md, bool* fences_ok) {
    std::string out;
    size_t open = 0;
    for (const auto& l : lines(md)) {
        if (open) {
            if (runAt(l, 0) >= open && runAt(l, 0) == l.size()) open = 0;
            continue;
        }
        if (size_t f = fenceLen(l)) {
            open = f;
            continue;
        }
        for (size_t i = 0; i < l.size();) {
            if (l[i] == '\\' && i + 1 < l.size()) {  // a backslash escape: never a delimiter
                out += l.substr(i, 2);
                i += 2;
                continue;
            }
            size_t n = runAt(l, i);
            if (!n) {
                out += l[i++];
                continue;
            }
            size_t j = i + n, close = std::string::npos;
            while (j < l.size()) {
                size_t m = runAt(l, j);
                if (m == n) {
                    close = j;
                    break;
                }
                j += m ? m : 1;
            }
            if (close == std::string::npos) {  // no closing run: literal backticks
                out += l.substr(i, n);
                i += n;
            } else {
                out += "CODE";
                i = close + n;
            }
        }
        out += '\n';
    }
    *fences_ok = open == 0;
    return out;
}

/// GFM cells of a table row: `|` not escaped by a backslash pair splits.
size_t cells(const std::string& row) {
    size_t n = 0;
    for (size_t i = 0; i < row.size(); ++i) {
        if (row[i] == '\\') {
            ++i;
            continue;
        }
        if (row[i] == '|') ++n;
    }
    return n;
}

TEST(ReportMarkdown, HostileNamesAndReasonKeepTheStructure) {
    TempDir tmp;
    std::string log = tmp.file("inj.log");
    std::ofstream(log) << kLog;
    std::string db = tmp.file("db");
    auto in = run({GPUFAULT_BIN, "--db", db, "ingest", log});
    ASSERT_EQ(in.status, 0) << in.err;
    auto r = run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "md"});
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string& md = r.out;

    bool fences_ok = false;
    std::string text = outsideCode(md, &fences_ok);
    EXPECT_TRUE(fences_ok) << md;
    EXPECT_EQ(text.find("<img"), std::string::npos) << md;
    EXPECT_EQ(text.find("<script"), std::string::npos) << md;
    EXPECT_EQ(text.find("<i>"), std::string::npos) << md;
    // Title and Reason carry the reason as text, entities escaped.
    EXPECT_NE(
        md.find("## AMD GPU memory access fault at 0x00007051e5c00000 (\\`\\`\\` &lt;/details&gt; "
                "| a | b | &lt;script&gt;alert(1)&lt;/script&gt;)"),
        std::string::npos)
        << md;
    EXPECT_NE(md.find("- Reason: \\`\\`\\` &lt;/details&gt;"), std::string::npos) << md;
    // The kernel: one code span delimited by a run longer than the name's backticks.
    EXPECT_NE(md.find("``_Z3fooI`|x|`<img src=x onerror=alert(1)>EvPf``"), std::string::npos) << md;

    // Every table row has its header's cell count; the operand row is there.
    auto ls = lines(md);
    size_t header = 0;
    bool operand_row = false;
    for (size_t i = 0; i < ls.size(); ++i) {
        if (ls[i].empty() || ls[i][0] != '|') {
            header = 0;
            continue;
        }
        if (!header) {
            header = cells(ls[i]);
            continue;
        }
        EXPECT_EQ(cells(ls[i]), header) << ls[i];
        // (the probe line comes after the fault line: marked so, docs/evidence.md)
        if (ls[i].find("| a\\|b\\`c&lt;i&gt;x&lt;/i&gt; (logged after the fault) |") !=
            std::string::npos)
            operand_row = true;
    }
    EXPECT_TRUE(operand_row) << md;

    // The ROCr evidence's fence holds the whole raw line: it opens with more than 3 backticks
    // and the line with ``` and </details> is inside it.
    bool inside = false;
    for (size_t i = 0; i + 2 < ls.size(); ++i) {
        if (fenceLen(ls[i]) > 3 && ls[i + 1].find("Memory access fault") == 0) {
            EXPECT_NE(ls[i + 1].find("<script>alert(1)</script>"), std::string::npos);
            EXPECT_EQ(ls[i + 2], ls[i]);
            inside = true;
        }
    }
    EXPECT_TRUE(inside) << md;
}

}  // namespace
}  // namespace gpufault::testing
