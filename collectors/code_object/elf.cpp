#include "collectors/code_object/elf.h"

#include <fmt/format.h>

namespace gpufault::codeobj {
namespace {

constexpr uint32_t kShtSymtab = 2, kShtNobits = 8, kShtDynsym = 11;

// A NUL-terminated name at `off` in the string table `tab` ("" when out of range).
std::string_view nameAt(Bytes tab, uint64_t off) {
    if (off >= tab.size()) return {};
    auto rest = asText(tab.subspan(off));
    return rest.substr(0, rest.find('\0'));
}

}  // namespace

bool isElf(Bytes b) {
    return hasMagic(b,
                    0,
                    "\x7f"
                    "ELF");
}

const ElfSection* Elf::find(std::string_view name) const {
    for (const auto& s : sections)
        if (s.name == name) return &s;
    return nullptr;
}

Result<Bytes> Elf::bytes(const ElfSection& s) const {
    if (s.type == kShtNobits) return Bytes{};
    auto b = slice(data, s.offset, s.size);
    if (!b)
        return fail(base + s.offset,
                    fmt::format("section {} (offset 0x{:x}, size 0x{:x}) runs past the end of the "
                                "ELF image (0x{:x} bytes)",
                                s.name,
                                s.offset,
                                s.size,
                                data.size()));
    return *b;
}

Result<Elf> parseElf(Bytes b, uint64_t base) {
    if (!isElf(b)) return fail(base, "not an ELF file (no \\x7fELF magic)");
    if (b.size() < 64)
        return fail(base, fmt::format("ELF header truncated ({} of 64 bytes)", b.size()));
    auto cls = readLe<uint8_t>(b, 4), data = readLe<uint8_t>(b, 5);
    if (*cls != 2 || *data != 1)
        return fail(base + 4,
                    fmt::format("not a little-endian ELF64 file (class {}, data {})", *cls, *data));
    Elf e;
    e.data = b;
    e.base = base;
    e.header.os_abi = *readLe<uint8_t>(b, 7);
    e.header.abi_version = *readLe<uint8_t>(b, 8);
    e.header.type = *readLe<uint16_t>(b, 16);
    e.header.machine = *readLe<uint16_t>(b, 18);
    e.header.flags = *readLe<uint32_t>(b, 48);
    uint64_t shoff = *readLe<uint64_t>(b, 40);
    uint16_t shentsize = *readLe<uint16_t>(b, 58);
    uint64_t shnum = *readLe<uint16_t>(b, 60);
    uint32_t shstrndx = *readLe<uint16_t>(b, 62);
    if (shoff == 0) return e;  // no section table (allowed: e.g. a bare program image)
    if (shentsize < 64) return fail(base + 58, fmt::format("e_shentsize {} < 64", shentsize));
    if (!slice(b, shoff, 64))
        return fail(
            base + 40,
            fmt::format(
                "section table at 0x{:x} lies past the end (0x{:x} bytes)", shoff, b.size()));
    // Extended numbering: e_shnum 0 / e_shstrndx SHN_XINDEX keep the real values in section 0.
    if (shnum == 0) shnum = *readLe<uint64_t>(b, shoff + 32);
    if (shstrndx == 0xffff) shstrndx = *readLe<uint32_t>(b, shoff + 40);
    if (shnum > (b.size() - shoff) / shentsize)
        return fail(base + 60,
                    fmt::format("{} section headers of {} bytes at 0x{:x} do not fit in "
                                "0x{:x} bytes",
                                shnum,
                                shentsize,
                                shoff,
                                b.size()));
    e.sections.resize(shnum);
    std::vector<uint32_t> nameOffsets(shnum);
    for (uint64_t i = 0; i < shnum; ++i) {
        uint64_t h = shoff + i * shentsize;
        nameOffsets[i] = *readLe<uint32_t>(b, h);
        auto& s = e.sections[i];
        s.type = *readLe<uint32_t>(b, h + 4);
        s.addr = *readLe<uint64_t>(b, h + 16);
        s.offset = *readLe<uint64_t>(b, h + 24);
        s.size = *readLe<uint64_t>(b, h + 32);
        s.link = *readLe<uint32_t>(b, h + 40);
    }
    if (shstrndx < shnum) {
        auto tab = e.bytes(e.sections[shstrndx]);
        if (!tab) return std::unexpected(tab.error());
        // A forged table's names may be long and all the same bytes (one run without a NUL
        // named by every section): each name and their sum are bounded, else the file is refused.
        uint64_t total = 0, maxTotal = 4 * tab->size() + (64u << 20);
        for (uint64_t i = 0; i < shnum; ++i) {
            auto name = nameAt(*tab, nameOffsets[i]);
            total += name.size();
            if (name.size() > kMaxSectionName || total > maxTotal)
                return fail(
                    base + e.sections[shstrndx].offset + nameOffsets[i],
                    fmt::format("section {}: its name ({} bytes at offset {} of the name "
                                "table) {}",
                                i,
                                name.size(),
                                nameOffsets[i],
                                name.size() > kMaxSectionName
                                    ? fmt::format("is longer than {} bytes", kMaxSectionName)
                                    : fmt::format("brings the names past {} bytes, 4 times "
                                                  "their table",
                                                  maxTotal)));
            e.sections[i].name = std::string(name);
        }
    }
    return e;
}

Result<std::vector<ElfSymbol>> symbols(const Elf& elf) {
    const ElfSection* tab = nullptr;
    for (uint32_t want : {kShtSymtab, kShtDynsym}) {
        for (const auto& s : elf.sections)
            if (s.type == want) {
                tab = &s;
                break;
            }
        if (tab) break;
    }
    std::vector<ElfSymbol> out;
    if (!tab) return out;
    if (tab->link >= elf.sections.size())
        return fail(elf.base,
                    fmt::format("symbol table {} links to section {} of {}",
                                tab->name,
                                tab->link,
                                elf.sections.size()));
    auto syms = elf.bytes(*tab);
    if (!syms) return std::unexpected(syms.error());
    auto strs = elf.bytes(elf.sections[tab->link]);
    if (!strs) return std::unexpected(strs.error());
    for (uint64_t off = 24; off + 24 <= syms->size(); off += 24) {  // entry 0 is the null symbol
        ElfSymbol s;
        s.name = nameAt(*strs, *readLe<uint32_t>(*syms, off));
        s.type = *readLe<uint8_t>(*syms, off + 4) & 0xf;
        uint16_t shndx = *readLe<uint16_t>(*syms, off + 6);
        s.value = *readLe<uint64_t>(*syms, off + 8);
        s.size = *readLe<uint64_t>(*syms, off + 16);
        if (!s.name.empty() && shndx != 0) out.push_back(std::move(s));
    }
    return out;
}

}  // namespace gpufault::codeobj
