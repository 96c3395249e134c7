#include "collectors/code_object/nv_fatbin.h"

#include <fmt/format.h>

#include "collectors/code_object/elf.h"

namespace gpufault::codeobj {
namespace {

// What an uncompressed cubin says about itself, against the entry's arch.
std::string checkCubin(Bytes payload, uint32_t arch) {
    if (!isElf(payload)) return "SASS entry does not hold an ELF file";
    auto machine = readLe<uint16_t>(payload, 18);
    auto flags = readLe<uint32_t>(payload, 48);
    auto abi = readLe<uint8_t>(payload, 8);
    if (!machine || !flags) return "cubin ELF header truncated";
    if (*machine != kEmCuda)
        return fmt::format("cubin e_machine {} is not EM_CUDA (190)", *machine);
    uint32_t sm = *abi >= 8 ? (*flags >> 8) & 0xff : *flags & 0xff;
    if (sm != arch)
        return fmt::format(
            "entry says sm_{} but its cubin is sm_{} (e_flags 0x{:x})", arch, sm, *flags);
    return {};
}

}  // namespace

std::string FatbinEntry::target() const {
    return fmt::format("{}_{}", isPtx() ? "compute" : "sm", arch);
}

Result<std::vector<FatbinContainer>> parseNvFatbin(Bytes b, uint64_t base) {
    std::vector<FatbinContainer> out;
    uint64_t pos = 0;
    while (pos < b.size()) {
        if (std::to_integer<int>(b[pos]) == 0) {  // padding between containers
            ++pos;
            continue;
        }
        auto magic = readLe<uint32_t>(b, pos);
        if (magic != kFatbinMagic)
            return fail(base + pos, "expected a CUDA fat binary header (magic 0xBA55ED50)");
        FatbinContainer c;
        c.offset = base + pos;
        auto version = readLe<uint16_t>(b, pos + 4), hsize = readLe<uint16_t>(b, pos + 6);
        auto fat = readLe<uint64_t>(b, pos + 8);
        if (!fat) return fail(base + pos, "CUDA fat binary header truncated");
        c.version = *version;
        c.fat_size = *fat;
        if (*hsize < 16 || !slice(b, pos + *hsize, *fat))
            return fail(base + pos + 8,
                        fmt::format("CUDA fat binary: header {} + size 0x{:x} runs "
                                    "past the end of the section (0x{:x})",
                                    *hsize,
                                    *fat,
                                    b.size() - pos));
        Bytes body = *slice(b, pos + *hsize, *fat);
        uint64_t bodyBase = base + pos + *hsize;
        uint64_t e = 0;
        while (e + 64 <= body.size()) {
            FatbinEntry x;
            x.offset = bodyBase + e;
            x.kind = *readLe<uint16_t>(body, e);
            x.header_size = *readLe<uint32_t>(body, e + 4);
            x.size = *readLe<uint64_t>(body, e + 8);
            x.compressed_size = *readLe<uint32_t>(body, e + 16);
            x.minor = *readLe<uint16_t>(body, e + 24);
            x.major = *readLe<uint16_t>(body, e + 26);
            x.arch = *readLe<uint32_t>(body, e + 28);
            x.flags = *readLe<uint64_t>(body, e + 40);
            x.decompressed_size = *readLe<uint64_t>(body, e + 56);
            if (x.header_size < 64 || !slice(body, e + x.header_size, x.size))
                return fail(x.offset + 4,
                            fmt::format("CUDA fat binary entry: header {} + payload "
                                        "0x{:x} runs past the container",
                                        x.header_size,
                                        x.size));
            if (x.kind == 2 && !x.compressed())
                x.mismatch = checkCubin(*slice(body, e + x.header_size, x.size), x.arch);
            c.entries.push_back(std::move(x));
            e += c.entries.back().header_size + c.entries.back().size;
        }
        out.push_back(std::move(c));
        pos += *hsize + *fat;
    }
    return out;
}

}  // namespace gpufault::codeobj
