// Time stamps that lost their time before: dmesg -H/-e time breaks and deltas (FORMATS.md §9.2),
// reply quotes followed by a TAB, journald short-precise fractions (§9.3); through the decoder and
// through the whole text pipeline to the amdgpu record.
#include <gtest/gtest.h>

#include <ctime>
#include <string>
#include <vector>

#include "collectors/pipeline.h"
#include "tests/collectors/prefix/decode_helper.h"

namespace gpufault::testing {
namespace {

const std::string kFault =
    "amdgpu 0000:65:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:88 vmid:8 pasid:32787)";

// The amdgpu_page_fault records of `lines` through TextPipeline.
std::vector<Evidence> faults(const std::vector<std::string>& lines) {
    CollectSink sink;
    TextPipeline pipe(sink);
    uint64_t n = 0;
    for (const auto& l : lines) pipe.feedLine(++n, l);
    pipe.finish();
    std::vector<Evidence> out;
    for (auto& e : sink.evidences)
        if (e.kind == Kind::AmdgpuPageFault) out.push_back(std::move(e));
    return out;
}

// dmesg -H `"[%s] "` with strftime `"%b%e %H:%M"`: the wall time to the minute, without a year.
TEST(DmesgHuman, TimeBreakGivesTheMinute) {
    std::tm dec26{};
    dec26.tm_year = 125, dec26.tm_mon = 11, dec26.tm_mday = 26, dec26.tm_hour = 8;
    dec26.tm_min = 58;
    const std::string sep9 = "[" + cstrftime("%b%e %H:%M") + "] ";
    const std::string dec = "[" + cstrftime("%b%e %H:%M", dec26) + "] ";
    ASSERT_EQ(sep9, "[Sep 9 02:30] ");
    ASSERT_EQ(dec, "[Dec26 08:58] ");
    struct Case {
        std::string stamp, wall;
    };
    for (const Case& c : {Case{sep9, "09-09T02:30"},
                          Case{dec, "12-26T08:58"},
                          Case{"[Dez26 08:58] ", "12-26T08:58"},  // de_DE
                          Case{"[d\xc3\xa9"
                               "c.26 08:58] ",
                               "12-26T08:58"},  // fr_FR `déc.`
                          Case{"[12\xe6\x9c\x88"
                               "25 19:09] ",
                               "12-25T19:09"}}) {  // zh_CN
        auto d = decodeOne(c.stamp + kFault);
        EXPECT_EQ(d.text, kFault) << c.stamp;
        EXPECT_EQ(d.time.wall, c.wall) << c.stamp;
        EXPECT_FALSE(d.time.kernel_s) << c.stamp;
        EXPECT_FALSE(d.time.wall_utc_s) << c.stamp;  // no year, no zone: no instant
        EXPECT_EQ(d.origin, Origin::Kernel) << c.stamp;
    }
}

// A break whose month is not known or whose date does not exist is still stripped, timeless.
TEST(DmesgHuman, BreakWithoutAValidDateHasNoWall) {
    for (const char* stamp : {"[Xyz 9 02:30] ", "[Feb30 02:30] ", "[Sep 9 25:30] "}) {
        auto d = decodeOne(stamp + kFault);
        EXPECT_EQ(d.text, kFault) << stamp;
        EXPECT_FALSE(d.time.wall) << stamp;
    }
}

// `[  %+8.06f] ` counts from the previous kernel record, printed or not (`| grep` drops the break
// of a new minute), so a delta line states no time of its own: none is given (docs/formats.md).
TEST(DmesgHuman, DeltaLinesStateNoTime) {
    for (const std::string& stamp : {cfmt("[  %+8.06f] ", 0.000007),
                                     std::string("[  +0,000007] "),
                                     cfmt("[ %+9.06f] ", 12.5)}) {
        auto d = decodeOne(stamp + kFault);
        EXPECT_EQ(d.text, kFault) << stamp;
        EXPECT_TRUE(d.time.empty()) << stamp;
    }
}

// Fixture 095's last two blocks: the block after a break has its minute, the one printed with a
// delta has no time.
TEST(DmesgHuman, FaultRecordsGetTheBreaksMinute) {
    const std::string d = "amdgpu 0000:03:00.0: amdgpu: ";
    auto r = faults(
        {"[  +0.000007] " + d + "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:32781)",
         "[  +0.000001] " + d + "  in page starting at address 0x00007963a6433000 from client 10",
         "[12\xe6\x9c\x88"
         "25 19:09] " +
             d + "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:32785)",
         "[  +0.000008] " + d + " in process python3 pid 6318 thread python3 pid 6318)",
         "[  +0,000001] " + d + "  in page starting at address 0x000074adb5565000 from client 10"});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].address, 0x7963a6433000u);
    EXPECT_TRUE(r[0].time.empty());
    EXPECT_EQ(r[1].address, 0x74adb5565000u);
    EXPECT_EQ(r[1].pid, 6318);
    EXPECT_EQ(r[1].time.wall, "12-25T19:09");
}

// `>` + TAB quoting (a mail client's or a forum's quote of a dmesg excerpt) keeps the stamp.
TEST(ReplyQuote, TabAfterTheQuoteKeepsTheDmesgStamp) {
    const std::string stamp = cfmt("[%5ld.%06ld] ", 4778L, 915423L);
    for (const std::string& quote :
         {std::string(">\t"), std::string("> >\t"), std::string(">\t> "), std::string("> \t")}) {
        auto d = decodeOne(quote + stamp + kFault);
        EXPECT_EQ(d.text, kFault) << quote;
        ASSERT_TRUE(d.time.kernel_s) << quote;
        EXPECT_NEAR(*d.time.kernel_s, 4778.915423, 5e-7) << quote;
        EXPECT_EQ(d.origin, Origin::Kernel) << quote;
    }
    auto j = decodeOne(">\t" + cstrftime("%b %d %H:%M:%S") + " host kernel: " + kFault);
    EXPECT_EQ(j.text, kFault);
    EXPECT_EQ(j.time.wall, "09-09T02:30:28");
    // A `>` glued to text is no quote.
    EXPECT_EQ(decodeOne(">x " + kFault).text, ">x " + kFault);

    auto r = faults({">\t" + stamp + kFault});
    ASSERT_EQ(r.size(), 1u);
    ASSERT_TRUE(r[0].time.kernel_s);
    EXPECT_NEAR(*r[0].time.kernel_s, 4778.915423, 5e-7);
}

// journald short-precise: logs-show.c prints `%b %d %H:%M:%S` then `.%06lu`.
TEST(JournaldPrecise, ShortPreciseKeepsTheMicroseconds) {
    auto p =
        decodeOne(cstrftime("%b %d %H:%M:%S") + cfmt(".%06lu", 7UL) + " host kernel: " + kFault);
    EXPECT_EQ(p.text, kFault);
    EXPECT_EQ(p.time.wall, "09-09T02:30:28.000007");
    EXPECT_FALSE(p.time.wall_utc_s);
    // rsyslog's traditional form has no fraction and keeps the plain second.
    EXPECT_EQ(decodeOne(cstrftime("%b %e %H:%M:%S") + " host kernel: " + kFault).time.wall,
              "09-09T02:30:28");

    auto r = faults({"Jan 02 12:00:00.123456 host kernel: " + kFault,
                     "Jan 02 12:00:00.123461 host kernel: amdgpu 0000:65:00.0: amdgpu:   in page "
                     "starting at address 0x00007f0000001000 from client 10"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].time.wall, "01-02T12:00:00.123456");
    EXPECT_EQ(r[0].address, 0x7f0000001000u);
}

}  // namespace
}  // namespace gpufault::testing
