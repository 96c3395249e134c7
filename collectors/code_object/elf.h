// ELF64 little-endian reader: header, section lookup, symbols. Source: the System V gABI
// (ELF-64 Object File Format 1.5) and glibc's <elf.h> field layout.
//
// Why not libelf: we need four things (the header, section headers, section names, symbols)
// from a const, possibly mmapped, possibly hostile buffer, and errors that say which file
// offset is wrong. libelf's elf_memory() takes a mutable buffer and reports errors without
// offsets, and it would add a dependency for ~150 lines of checked reads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/code_object/bytes.h"

namespace gpufault::codeobj {

inline constexpr uint16_t kEmAmdgpu = 224;  ///< EM_AMDGPU
inline constexpr uint16_t kEmCuda = 190;    ///< EM_CUDA

/// The fields of the ELF header this tool reads.
struct ElfHeader {
    uint8_t os_abi = 0;       ///< e_ident[EI_OSABI]: 64 = AMDGPU HSA, 0x41 = CUDA
    uint8_t abi_version = 0;  ///< e_ident[EI_ABIVERSION]
    uint16_t type = 0;        ///< e_type
    uint16_t machine = 0;     ///< e_machine
    uint32_t flags = 0;       ///< e_flags
};

/// The longest section or kernel name taken from a string table, in bytes. Mangled kernel names
/// of template-heavy libraries (CUTLASS, Composable Kernel) reach a few KiB; a cubin's sections
/// are named after its kernels (`.nv.info.<kernel>`). A longer one is a forged table.
inline constexpr size_t kMaxSectionName = 64u << 10;

/// One section: its name, type, file range and load address.
struct ElfSection {
    std::string name;
    uint32_t type = 0;
    uint64_t addr = 0, offset = 0, size = 0;
    uint32_t link = 0;
};

/// A parsed ELF64 image: header and section table (names resolved). `data` is the whole image.
struct Elf {
    Bytes data;
    uint64_t base = 0;  ///< file offset of data[0], added to error offsets
    ElfHeader header;
    std::vector<ElfSection> sections;

    /// The first section called `name`, or nullptr.
    const ElfSection* find(std::string_view name) const;
    /// The bytes of `s` (SHT_NOBITS sections have none); an error when they lie outside data.
    Result<Bytes> bytes(const ElfSection& s) const;
};

/// True when `b` starts with the ELF magic `\x7fELF`.
bool isElf(Bytes b);

/// Parses the ELF64 little-endian header and section table of `b`. `base` is the file offset
/// of `b` (errors name file offsets). Section count is bounded by what fits in `b`; a name
/// longer than kMaxSectionName, or names of more than 4 times their table's size + 64 MiB in
/// all (one run without a NUL named by every section), is an error naming the section.
Result<Elf> parseElf(Bytes b, uint64_t base = 0);

/// A defined symbol: name and value (an address for executables and shared objects). `name`
/// points into the image's bytes (valid while they are).
struct ElfSymbol {
    std::string_view name;
    uint64_t value = 0, size = 0;
    uint8_t type = 0;  ///< STT_*: 1 object, 2 func
};

/// The symbols of .symtab, else .dynsym (named ones only). Empty when there are none.
Result<std::vector<ElfSymbol>> symbols(const Elf& elf);

}  // namespace gpufault::codeobj
