#include "collectors/coredump/exe_check.h"

#include <elf.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "collectors/coredump/core_elf.h"

namespace gpufault::coredump {

namespace {

std::string hexOf(const unsigned char* p, size_t n) {
    std::string s;
    s.reserve(n * 2);
    for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", p[i]);
    return s;
}

/// AT_ENTRY of NT_AUXV and the NT_FILE mappings, from the core's PT_NOTE segments.
struct CoreView {
    std::optional<uint64_t> entry;
    std::vector<MappedFile> files;
};

CoreView viewOf(Elf* core) {
    CoreView v;
    size_t phnum = 0;
    if (elf_getphdrnum(core, &phnum) != 0) return v;
    CoreNotes notes;
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (!gelf_getphdr(core, static_cast<int>(i), &ph) || ph.p_type != PT_NOTE) continue;
        Elf_Data* d = elf_getdata_rawchunk(core, ph.p_offset, ph.p_filesz, ELF_T_NHDR);
        if (!d) continue;
        parseNotes(std::string_view(static_cast<const char*>(d->d_buf), d->d_size), notes);
        GElf_Nhdr nh;
        size_t off = 0, name_off = 0, desc_off = 0;
        while (!v.entry && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
            if (nh.n_type != NT_AUXV || nh.n_descsz % 16 != 0) continue;
            const auto* p = static_cast<const unsigned char*>(d->d_buf) + desc_off;
            for (size_t k = 0; k + 16 <= nh.n_descsz; k += 16) {
                uint64_t type = 0, value = 0;
                std::memcpy(&type, p + k, 8);
                std::memcpy(&value, p + k + 8, 8);
                if (type == AT_ENTRY) v.entry = value;
            }
        }
    }
    v.files = std::move(notes.files);
    return v;
}

/// The build-id of the core's executable as its memory shows it (the module at AT_ENTRY).
std::optional<std::string> memoryBuildId(Elf* core, const Dwfl_Callbacks& cb, uint64_t entry) {
    Dwfl* probe = dwfl_begin(&cb);
    if (!probe) return std::nullopt;
    std::optional<std::string> out;
    dwfl_report_begin(probe);
    if (dwfl_core_file_report(probe, core, nullptr) >= 0 &&
        dwfl_report_end(probe, nullptr, nullptr) == 0) {
        if (Dwfl_Module* m = dwfl_addrmodule(probe, entry)) {
            const unsigned char* bits = nullptr;
            GElf_Addr vaddr = 0;
            if (int n = dwfl_module_build_id(m, &bits, &vaddr); n > 0)
                out = hexOf(bits, static_cast<size_t>(n));
        }
    }
    dwfl_end(probe);
    return out;
}

/// One PT_LOAD as the kernel maps it: page-aligned address and file offset, file-backed bytes.
struct Segment {
    uint64_t vaddr = 0, offset = 0, length = 0;
};

/// The ELF file at `path`: its build-id, type and loadable segments; nullopt when no ELF.
struct ExeFile {
    std::optional<std::string> build_id;
    uint16_t type = 0;
    std::vector<Segment> segments;
};

std::optional<ExeFile> readExe(const std::string& path, uint64_t page) {
    // Non-blocking, regular files only: a FIFO at the path must not hang the check.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return std::nullopt;
    }
    std::optional<ExeFile> out;
    if (Elf* e = elf_begin(fd, ELF_C_READ, nullptr)) {
        GElf_Ehdr eh;
        size_t phnum = 0;
        if (gelf_getehdr(e, &eh) && elf_getphdrnum(e, &phnum) == 0) {
            ExeFile f;
            f.type = eh.e_type;
            const void* bits = nullptr;
            if (ssize_t n = dwelf_elf_gnu_build_id(e, &bits); n > 0)
                f.build_id = hexOf(static_cast<const unsigned char*>(bits), static_cast<size_t>(n));
            for (size_t i = 0; i < phnum; ++i) {
                GElf_Phdr ph;
                if (!gelf_getphdr(e, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD ||
                    ph.p_filesz == 0)
                    continue;
                Segment s;
                s.vaddr = ph.p_vaddr & ~(page - 1);
                s.offset = ph.p_offset & ~(page - 1);
                s.length = ((ph.p_vaddr - s.vaddr) + ph.p_filesz + page - 1) & ~(page - 1);
                f.segments.push_back(s);
            }
            out = std::move(f);
        }
        elf_end(e);
    }
    ::close(fd);
    return out;
}

/// The first mapping of `maps` that no segment of `f` explains (address and file offset in
/// step, end inside the segment), as text; nullopt when all fit. ET_DYN files are placed by
/// the mapping of file offset 0.
std::optional<std::string> layoutMismatch(const ExeFile& f, const std::vector<MappedFile>& maps) {
    if (f.segments.empty()) return "it has no loadable segment";
    uint64_t bias = 0;
    if (f.type == ET_DYN) {
        const MappedFile* first = nullptr;
        for (const auto& m : maps)
            if (m.file_offset == 0 && (!first || m.start < first->start)) first = &m;
        const Segment* seg0 = nullptr;
        for (const auto& s : f.segments)
            if (s.offset == 0) seg0 = &s;
        if (!first || !seg0) return "no mapping of its first page";
        bias = first->start - seg0->vaddr;
    }
    for (const auto& m : maps) {
        bool fits = false;
        for (const auto& s : f.segments) {
            uint64_t rel = m.start - bias;
            if (rel < s.vaddr || m.file_offset < s.offset) continue;
            if (rel - s.vaddr != m.file_offset - s.offset) continue;
            if (m.end - bias > s.vaddr + s.length) continue;
            fits = true;
            break;
        }
        if (!fits)
            return fmt::format("the core maps {:#x}-{:#x} from file offset {:#x}, which none of its "
                               "segments holds",
                               m.start,
                               m.end,
                               m.file_offset);
    }
    return std::nullopt;
}

}  // namespace

ExeCheck checkExe(Elf* core,
                  const Dwfl_Callbacks& cb,
                  const std::string& exe,
                  const std::string& named_as) {
    const std::string named = named_as.empty() ? "--exe " + exe : named_as;
    ExeCheck out;
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    auto file = readExe(exe, page);
    CoreView view = viewOf(core);
    std::optional<std::string> want;
    if (view.entry) want = memoryBuildId(core, cb, *view.entry);
    if (want) {
        std::optional<std::string> have = file ? file->build_id : std::nullopt;
        if (have != want)
            out.refused = fmt::format("{} has build-id {}, the core's executable {}: not used",
                                      named,
                                      have.value_or("(none)"),
                                      *want);
        return out;
    }
    // No build-id in the core: compare the executable's mappings with the file's segments.
    std::vector<MappedFile> maps;
    if (view.entry)
        for (const auto& m : view.files)
            if (m.start <= *view.entry && *view.entry < m.end)
                for (const auto& n : view.files)
                    if (n.path == m.path) maps.push_back(n);
    if (!file) {
        out.refused = fmt::format("{}: not an ELF file: not used", named);
        return out;
    }
    if (maps.empty()) {
        out.unverified = fmt::format(
            "{} used unverified: the core shows neither its executable's build-id nor "
            "its mappings",
            named);
        return out;
    }
    if (auto why = layoutMismatch(*file, maps)) {
        out.refused = fmt::format("{} does not fit the core's executable {}: {}: not used",
                                  named,
                                  maps.front().path,
                                  *why);
        return out;
    }
    out.core_exe = maps.front().path;
    out.unverified = fmt::format(
        "{} used unverified: the core keeps no build-id of its executable {} (its {} "
        "file mappings fit the file's segments)",
        named,
        maps.front().path,
        maps.size());
    return out;
}

std::optional<std::string> coreExePath(Elf* core) {
    CoreView view = viewOf(core);
    if (!view.entry) return std::nullopt;
    for (const auto& m : view.files)
        if (m.start <= *view.entry && *view.entry < m.end) return m.path;
    return std::nullopt;
}

bool coreKeepsExeBuildId(Elf* core, const Dwfl_Callbacks& cb) {
    CoreView view = viewOf(core);
    return view.entry && memoryBuildId(core, cb, *view.entry).has_value();
}

std::vector<MappedFile> coreFileMappings(Elf* core) {
    return viewOf(core).files;
}

std::optional<std::string> fileLayoutMismatch(const std::string& path,
                                              const std::vector<MappedFile>& maps) {
    auto file = readExe(path, static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)));
    if (!file) return "not an ELF file";
    return layoutMismatch(*file, maps);
}

}  // namespace gpufault::coredump
