#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/runtime_log/operand_probe.h"

namespace gpufault {
namespace {

CollectSink run(const std::vector<std::string>& lines, std::optional<int64_t> rank = {}) {
    auto m = makeOperandProbeMatcher();
    CollectSink sink;
    uint64_t n = 0;
    for (const auto& s : lines) {
        LogLine l;
        l.line = ++n;
        l.text = s;
        l.raw = s;
        l.rank = rank;
        m->feed(l, sink);
    }
    m->finish(sink);
    return sink;
}

TEST(OperandProbe, ParenthesisedValuesNameFromTag) {
    auto s = run({"[dequant_probe] shape=(21504, 5376) stride=(1, 21504) contig=False "
                  "dtype=torch.bfloat16 ptr=0x7ef978800000 end=0x7ef986480000"},
                 2);
    ASSERT_EQ(s.operands.size(), 1u);
    const Operand& o = s.operands[0];
    EXPECT_EQ(o.name, "dequant_probe");
    EXPECT_EQ(o.origin, "probe");
    EXPECT_EQ(o.ptr, 0x7ef978800000u);
    EXPECT_EQ(o.end, 0x7ef986480000u);
    EXPECT_EQ(o.shape, "(21504, 5376)");
    EXPECT_EQ(o.stride, "(1, 21504)");
    EXPECT_EQ(o.dtype, "torch.bfloat16");
    EXPECT_EQ(o.rank, 2);
    EXPECT_FALSE(o.arg_ptr);
    EXPECT_TRUE(s.evidences.empty());
    EXPECT_TRUE(s.warnings.empty());
}

TEST(OperandProbe, EndWinsOverBytesMismatchWarns) {
    auto s = run({"[operand] name=B ptr=0x1000 end=0x2000 bytes=100 dtype=float32"});
    ASSERT_EQ(s.operands.size(), 1u);
    EXPECT_EQ(s.operands[0].name, "B");
    EXPECT_EQ(s.operands[0].end, 0x2000u);
    ASSERT_EQ(s.warnings.size(), 1u);
    EXPECT_EQ(s.warnings[0].line, 1u);
}

TEST(OperandProbe, SizeBytesNbytesGiveTheEnd) {
    auto s = run({"[buf] name=x ptr=0x1000 size=256",
                  "[buf] name=y ptr=0x2000 nbytes=0x10",
                  "[buf] ptr=0x3000 bytes=4,000 shape=[2, 3]",
                  "[2024-01-01 10:00] [probe] name=z shape=[4] ptr=0x4000 bytes=8"});
    ASSERT_EQ(s.operands.size(), 4u);
    EXPECT_EQ(s.operands[0].end, 0x1100u);
    EXPECT_EQ(s.operands[1].end, 0x2010u);
    EXPECT_EQ(s.operands[2].name, "buf");
    EXPECT_EQ(s.operands[2].end, 0x3000u + 4000u);
    EXPECT_EQ(s.operands[2].shape, "[2, 3]");
    EXPECT_EQ(s.operands[3].name, "z");
    EXPECT_EQ(s.operands[3].shape, "[4]");
    EXPECT_EQ(s.operands[3].end, 0x4008u);
}

TEST(OperandProbe, RealProbeLineFixture071) {
    auto s =
        run({"[operand] name=B ptr=0x7eff2c800200 end=0x7eff2c8011a0 shape=(1000,) dtype=float32 "
             "bytes=4000 alloc=cudaMalloc"});
    ASSERT_EQ(s.operands.size(), 1u);
    EXPECT_EQ(s.operands[0].ptr, 0x7eff2c800200u);
    EXPECT_EQ(s.operands[0].end, 0x7eff2c8011a0u);
    EXPECT_EQ(s.operands[0].shape, "(1000,)");
    EXPECT_TRUE(s.warnings.empty());  // 0x11a0 - 0x200 = 4000
}

TEST(OperandProbe, CanonicalLine) {
    auto s =
        run({"INFO gpufault.operand name=weight ptr=0x7f0000000000 size=4096 dtype=float16 "
             "shape=(64, 32)",
             "gpufault.operand name=out ptr=0x7f0000100000 end=0x7f0000100400"});
    ASSERT_EQ(s.operands.size(), 2u);
    EXPECT_EQ(s.operands[0].origin, "canonical");
    EXPECT_EQ(s.operands[0].name, "weight");
    EXPECT_EQ(s.operands[0].end, 0x7f0000001000u);
    EXPECT_EQ(s.operands[0].shape, "(64, 32)");
    EXPECT_EQ(s.operands[1].end, 0x7f0000100400u);
}

TEST(OperandProbe, AccessCheckParamAndSizelessLinesAreNotOperands) {
    auto s =
        run({"[access] kernel=k op=write addr_first=0x7eff2c8011a0 addr_last=0x7eff2c8011a3",
             "[check] target addr=0x7eff2c8011a0 cuMemGetAddressRange=CUDA_ERROR_NOT_FOUND (500)",
             "[param] elem_off=1798517504 byte_off=0x1accccc00",
             "[access] ptr=0x1000 size=4",
             "[probe] ptr=0x1000 shape=(3,)",
             "no tag ptr=0x1000 end=0x2000",
             "[x] ptr=0x2000 end=0x1000"});
    EXPECT_TRUE(s.operands.empty());
    EXPECT_EQ(s.warnings.size(), 1u);  // end below ptr
}

TEST(OperandProbe, HostileNumbersAreRejectedNotWrapped) {
    auto s = run({"gpufault.operand name=A ptr=0x1000 size=16 pid=18446744073709551615",
                  "gpufault.operand name=B ptr=0x" + std::string(40, 'f') + " size=16",
                  "gpufault.operand name=C ptr=0xffffffffffffff00 size=0x1000",
                  "gpufault.operand name=D ptr=0x1000 size=99999999999999999999"});
    ASSERT_EQ(s.operands.size(), 1u);  // B: ptr overflows, C: end overflows, D: size overflows
    EXPECT_EQ(s.operands[0].name, "A");
    EXPECT_EQ(s.operands[0].end, 0x1010u);
    EXPECT_FALSE(s.operands[0].pid);  // not -1
    // every refusal is a warning naming the line (hostile review 16, i2 M2)
    ASSERT_EQ(s.warnings.size(), 4u);
    EXPECT_EQ(s.warnings[0].line, 1u);
    EXPECT_NE(s.warnings[0].message.find("pid=18446744073709551615 is not a pid"),
              std::string::npos);
    EXPECT_EQ(s.warnings[1].line, 2u);
    EXPECT_NE(s.warnings[1].message.find("operand B: ptr=0xffff"), std::string::npos);
    EXPECT_NE(s.warnings[1].message.find("is not an address"), std::string::npos);
    EXPECT_EQ(s.warnings[2].line, 3u);
    EXPECT_EQ(s.warnings[3].line, 4u);
}

// A sized line whose ptr or end is no number says it meant to be an operand: a warning, not
// silence; a line with ptr= and no size is no operand and no warning.
TEST(OperandProbe, UnreadablePtrOrEndOfASizedLineIsAWarning) {
    auto s = run({"[probe] name=X ptr=nil size=16",
                  "[probe] name=Y ptr=0x1000 end=0x20zz size=16",
                  "[probe] name=Z ptr=nil shape=(2,)"});
    EXPECT_TRUE(s.operands.empty());
    ASSERT_EQ(s.warnings.size(), 2u);
    EXPECT_EQ(s.warnings[0].message,
              "operand X: ptr=nil is not an address (hex or decimal below 2^64); line ignored");
    EXPECT_EQ(s.warnings[1].message,
              "operand Y: end=0x20zz is not an address (hex or decimal below 2^64); line "
              "ignored");
}

// Coloured probe output: `ESC[…m` around values separates tokens as a blank does.
// Hostile review 17, i2 LOW 5: the second of two `ptr=` was taken without a word.
TEST(OperandProbe, ARepeatedKeyRefusesTheLine) {
    auto r = run({"[p] ptr=0x7f00000a0000 ptr=0x7f00000b0000 size=16",
                  "[p] name=a name=b ptr=0x7f00000a0000 size=16",
                  "[p] name=ok ptr=0x7f00000a0000 size=16 shape=(4,) shape=(2,2)"});
    ASSERT_EQ(r.operands.size(), 1u);
    EXPECT_EQ(r.operands[0].name, "ok");
    ASSERT_EQ(r.warnings.size(), 2u);
    EXPECT_EQ(r.warnings[0].line, 1u);
    EXPECT_EQ(r.warnings[0].message,
              "operand p: repeated key 'ptr' (which value is meant cannot be told); line ignored");
    EXPECT_EQ(r.warnings[1].line, 2u);
}

TEST(OperandProbe, ColourSequencesEndValues) {
    auto s = run({"[probe] name=\x1b[32mW\x1b[0m ptr=0x1000 size=4096\x1b[0m "
                  "dtype=\x1b[33mfloat\x1b[0m"});
    ASSERT_EQ(s.operands.size(), 1u) << (s.warnings.empty() ? "" : s.warnings[0].message);
    EXPECT_EQ(s.operands[0].name, "W");
    EXPECT_EQ(s.operands[0].end, 0x2000u);
    EXPECT_EQ(s.operands[0].dtype, "float");
    EXPECT_TRUE(s.warnings.empty());
}

}  // namespace
}  // namespace gpufault
