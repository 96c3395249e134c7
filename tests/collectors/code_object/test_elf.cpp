// The ELF reader's section names (collectors/code_object/elf.h) against a forged names table:
// hostile review 151, HIGH: every name was copied up to the next NUL, so 4 000 sections naming
// one 1 MiB run without a NUL made `gpufault codeobj --list` abort (bad_alloc).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/code_object/elf.h"
#include "tests/collectors/code_object/bundle_builder.h"

namespace gpufault::codeobj::testing {
namespace {

/// An ELF64 relocatable object of sections named by offsets `names` into `strtab`, which is
/// the last section (.shstrtab; its own name at offset 0).
std::string elfWithNames(const std::string& strtab, const std::vector<uint32_t>& names) {
    std::string f = std::string(
                        "\x7f"
                        "ELF\x02\x01\x01",
                        7) +
                    std::string(9, '\0');
    auto put16 = [&](uint16_t v) {
        f += static_cast<char>(v & 0xff), f += static_cast<char>(v >> 8);
    };
    put16(1);    // ET_REL
    put16(224);  // EM_AMDGPU
    putU32(f, 1);
    putU64(f, 0);
    putU64(f, 0);                   // e_phoff
    putU64(f, 64 + strtab.size());  // e_shoff
    putU32(f, 0);
    put16(64);
    put16(56);
    put16(0);
    put16(64);
    put16(static_cast<uint16_t>(names.size() + 2));
    put16(static_cast<uint16_t>(names.size() + 1));
    f += strtab;
    f += std::string(64, '\0');
    auto section = [&](uint32_t name, uint32_t type, uint64_t off, uint64_t size) {
        putU32(f, name);
        putU32(f, type);
        putU64(f, 0);
        putU64(f, 0);
        putU64(f, off);
        putU64(f, size);
        putU32(f, 0);
        putU32(f, 0);
        putU64(f, 1);
        putU64(f, 0);
    };
    for (uint32_t n : names) section(n, 1, 0, 0);
    section(0, 3, 64, strtab.size());
    return f;
}

TEST(Elf, SectionNamesAreReadUpToTheirNul) {
    auto f = elfWithNames(std::string(".shstrtab\0.text\0.nv.info.kern\0", 31), {10, 16, 20});
    auto e = parseElf(bytesOf(f));
    ASSERT_TRUE(e) << e.error().message;
    ASSERT_EQ(e->sections.size(), 5u);
    EXPECT_EQ(e->sections[1].name, ".text");
    EXPECT_EQ(e->sections[2].name, ".nv.info.kern");
    EXPECT_EQ(e->sections[3].name, "info.kern");  // a name inside another (tail merging)
    EXPECT_EQ(e->sections[4].name, ".shstrtab");
}

TEST(Elf, ANameLongerThanAnySectionNameIsAnErrorNamingTheSection) {
    std::string strtab = std::string(".shstrtab\0", 10) + std::string(kMaxSectionName + 1, 'k');
    auto e = parseElf(bytesOf(elfWithNames(strtab, {10})));
    ASSERT_FALSE(e);
    EXPECT_NE(e.error().message.find("section 1: its name (65537 bytes at offset 10 of the name "
                                     "table) is longer than 65536 bytes"),
              std::string::npos)
        << e.error().message;
    EXPECT_EQ(e.error().offset, 64u + 10);
}

TEST(Elf, NamesThatAllNameOneLongRunAreAnErrorPastTheirSum) {
    // 4 000 sections naming one 60 000-byte run: 240 MB of names from a table of 60 010 bytes.
    std::string strtab = std::string(".shstrtab\0", 10) + std::string(60000, 'k');
    auto e = parseElf(bytesOf(elfWithNames(strtab, std::vector<uint32_t>(4000, 10))));
    ASSERT_FALSE(e);
    EXPECT_NE(e.error().message.find("brings the names past 67348904 bytes, 4 times their table"),
              std::string::npos)
        << e.error().message;
}

}  // namespace
}  // namespace gpufault::codeobj::testing
