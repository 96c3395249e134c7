#include "collectors/coredump/core_elf.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <functional>

namespace gpufault::coredump {

namespace {

constexpr uint32_t kPtLoad = 1, kPtNote = 4;
constexpr uint32_t kShtNull = 0, kShtNobits = 8;  ///< section types without file bytes
constexpr uint32_t kNtPrstatus = 1, kNtPrpsinfo = 3, kNtSiginfo = 0x53494749, kNtFile = 0x46494c45;

/// A little-endian unsigned integer at `off`; nullopt past the end of `b`.
template <class T>
std::optional<T> le(std::string_view b, uint64_t off) {
    if (off > b.size() || sizeof(T) > b.size() - off) return std::nullopt;
    T v = 0;
    for (size_t i = sizeof(T); i-- > 0;)
        v = static_cast<T>((v << 8) | static_cast<unsigned char>(b[off + i]));
    return v;
}

int64_t asInt32(uint32_t v) {
    return static_cast<int32_t>(v);
}

/// A NUL-terminated string inside [off, off + max) of `b`.
std::string cstr(std::string_view b, uint64_t off, size_t max) {
    if (off >= b.size()) return {};
    auto s = b.substr(off, std::min<size_t>(max, b.size() - off));
    return std::string(s.substr(0, s.find('\0')));
}

Result<ElfHead> parseHead(std::string_view h) {
    if (h.size() < 64 || h.substr(0, 4) !=
                             "\x7f"
                             "ELF")
        return std::unexpected(Error{"not an ELF file"});
    if (h[4] != 2) return std::unexpected(Error{"a 32-bit ELF core is not supported"});
    if (h[5] != 1) return std::unexpected(Error{"a big-endian ELF core is not supported"});
    ElfHead e;
    e.os_abi = static_cast<uint8_t>(h[7]);
    e.abi_version = static_cast<uint8_t>(h[8]);
    e.type = *le<uint16_t>(h, 16);
    e.machine = *le<uint16_t>(h, 18);
    e.phoff = *le<uint64_t>(h, 32);
    e.shoff = *le<uint64_t>(h, 40);
    e.flags = *le<uint32_t>(h, 48);
    e.phnum = *le<uint16_t>(h, 56);
    e.shnum = *le<uint16_t>(h, 60);
    e.shstrndx = *le<uint16_t>(h, 62);
    if (*le<uint16_t>(h, 54) != 56 && e.phnum)
        return std::unexpected(Error{fmt::format(
            "bad e_phentsize {} at offset 54 (ELF64 program headers are 56 bytes)",
            *le<uint16_t>(h, 54))});
    if (*le<uint16_t>(h, 58) != 64 && e.shnum)
        return std::unexpected(Error{fmt::format(
            "bad e_shentsize {} at offset 58 (ELF64 section headers are 64 bytes)",
            *le<uint16_t>(h, 58))});
    return e;
}

/// Reads exactly [off, off + n) or says which range lies outside the file.
Result<std::string> readRange(
    const ReadAt& read, uint64_t size, uint64_t off, uint64_t n, std::string_view what) {
    if (off > size || n > size - off)
        return std::unexpected(Error{
            fmt::format("truncated: {} at 0x{:x}+0x{:x} lies beyond the end of the file ({} bytes)",
                        what,
                        off,
                        n,
                        size)});
    auto s = read(off, static_cast<size_t>(n));
    if (s.size() != n)
        return std::unexpected(Error{fmt::format("short read of {} at 0x{:x}", what, off)});
    return s;
}

void parsePrstatus(std::string_view d, CoreNotes& out) {
    // elf_prstatus (64-bit): pr_info (12), pr_cursig (short) at 12, sigpend/sighold, pr_pid at 32.
    auto pid = le<uint32_t>(d, 32);
    bool first = !out.prstatus_seen;
    out.prstatus_seen = true;
    if (!pid || asInt32(*pid) <= 0 || asInt32(*pid) > kMaxPid) {  // no thread's id
        if (first) out.crashing_unknown = true;  // the next one is not the crashing thread
        return;
    }
    if (first)
        if (auto sig = le<uint16_t>(d, 12); sig && *sig >= 1 && *sig <= kMaxSignal)
            out.cursig = *sig;
    if (out.tids.size() < 1u << 20) out.tids.push_back(asInt32(*pid));
}

void parsePrpsinfo(std::string_view d, CoreNotes& out) {
    // elf_prpsinfo (64-bit): state/sname/zomb/nice (4), pad, pr_flag (8) at 8, pr_uid at 16,
    // pr_gid 20, pr_pid 24, pr_ppid 28, pr_pgrp 32, pr_sid 36, pr_fname[16] at 40, pr_psargs.
    // pr_psargs (the command line) is not read: it may hold secrets.
    if (d.size() < 56) return;
    out.uid = *le<uint32_t>(d, 16);
    // A number that is no pid (forged, or a cut note's garbage) is not stored as one.
    if (auto pid = asInt32(*le<uint32_t>(d, 24)); pid > 0 && pid <= kMaxPid) out.pid = pid;
    if (auto ppid = asInt32(*le<uint32_t>(d, 28)); ppid >= 0 && ppid <= kMaxPid)
        out.ppid = ppid;
    out.comm = cstr(d, 40, 16);
}

void parseSiginfo(std::string_view d, SigInfo& s) {
    // siginfo_t (64-bit): si_signo, si_errno, si_code, pad; the union at 16.
    if (d.size() < 24) return;
    s.signo = static_cast<int>(asInt32(*le<uint32_t>(d, 0)));
    s.code = static_cast<int>(asInt32(*le<uint32_t>(d, 8)));
    bool fault = s.signo == SIGSEGV || s.signo == SIGBUS || s.signo == SIGILL ||
                 s.signo == SIGFPE || s.signo == SIGTRAP;
    // SI_KERNEL: its si_addr is 0 and means nothing.
    if (fault && s.code > 0 && s.code != kSiKernel)
        s.addr = *le<uint64_t>(d, 16);
    else if (s.code <= 0)  // SI_USER, SI_TKILL, SI_QUEUE: si_pid, si_uid
        s.sender = asInt32(*le<uint32_t>(d, 16));
}

void parseFiles(std::string_view d, std::vector<MappedFile>& out, uint64_t& files_stated) {
    // count, page_size, count × (start, end, file_ofs in pages), then count NUL-terminated names.
    auto count = le<uint64_t>(d, 0), page = le<uint64_t>(d, 8);
    if (!count || !page || *count > (d.size() - 16) / 24) return;
    uint64_t names = 16 + *count * 24;
    files_stated = *count;
    for (uint64_t i = 0; i < *count && i < kMaxMappedFiles && names < d.size(); ++i) {
        MappedFile f;
        f.start = *le<uint64_t>(d, 16 + i * 24);
        f.end = *le<uint64_t>(d, 24 + i * 24);
        f.file_offset = *le<uint64_t>(d, 32 + i * 24) * *page;
        f.path = cstr(d, names, d.size() - names);
        names += f.path.size() + 1;
        out.push_back(std::move(f));
    }
}

}  // namespace

std::string_view coreKindName(CoreKind k) {
    switch (k) {
        case CoreKind::Cpu:
            return "cpu";
        case CoreKind::RocrGpu:
            return "rocr_gpu";
        case CoreKind::CudaGpu:
            return "cuda_gpu";
    }
    return "cpu";
}

namespace {
/// A 16-bit field of an ELF header (head holds at least 20 bytes), in the file's byte order.
uint16_t elfHalf(std::string_view head, size_t off) {
    auto a = static_cast<unsigned char>(head[off]), b = static_cast<unsigned char>(head[off + 1]);
    return static_cast<uint16_t>(head[5] == 1 ? a | (b << 8) : (a << 8) | b);
}
bool elfMagic(std::string_view head) {
    return head.size() >= 4 && head.substr(0, 4) ==
                                   "\x7f"
                                   "ELF";
}
}  // namespace

std::optional<std::string> notACore(std::string_view head) {
    if (!elfMagic(head)) return std::nullopt;
    if (head.size() < 20)
        return fmt::format("a cut ELF header ({} bytes): not a core", head.size());
    uint16_t type = elfHalf(head, 16);
    if (type == kEtCore) return std::nullopt;
    const char* what = type == 1   ? "a relocatable object"
                       : type == 2 ? "an executable"
                       : type == 3 ? "a shared object or PIE executable"
                                   : "an ELF file";
    return fmt::format("{} (ELF e_type {}), not a core", what, type);
}

std::optional<CoreKind> sniffCore(std::string_view head) {
    if (head.size() < 20 || !elfMagic(head)) return std::nullopt;
    uint16_t type = elfHalf(head, 16), machine = elfHalf(head, 18);
    if (machine == kEmAmdgpu && type == kEtCore) return CoreKind::RocrGpu;
    if (machine == kEmCuda && type == kEtCore) return CoreKind::CudaGpu;
    if (type == kEtCore) return CoreKind::Cpu;
    return std::nullopt;
}

void parseNotes(std::string_view notes, CoreNotes& out, uint64_t file_offset) {
    uint64_t off = 0;
    auto pad4 = [](uint64_t n) { return (n + 3) & ~uint64_t{3}; };
    while (off + 12 <= notes.size()) {
        uint32_t namesz = *le<uint32_t>(notes, off), descsz = *le<uint32_t>(notes, off + 4),
                 type = *le<uint32_t>(notes, off + 8);
        uint64_t name = off + 12, desc = name + pad4(namesz);
        if (desc > notes.size() || descsz > notes.size() - desc) return;  // cut note: stop
        auto owner = cstr(notes, name, namesz);
        auto d = notes.substr(desc, descsz);
        if (owner == "CORE") {
            if (type == kNtPrstatus)
                parsePrstatus(d, out);
            else if (type == kNtPrpsinfo)
                parsePrpsinfo(d, out);
            else if (type == kNtSiginfo && !out.siginfo) {
                SigInfo si;
                parseSiginfo(d, si);
                if (si.signo >= 1 && si.signo <= kMaxSignal) out.siginfo = si;  // else none
            } else if (type == kNtFile && out.files.empty())
                parseFiles(d, out.files, out.files_stated);
        } else if (owner == "AMDGPU" && type == kNtAmdgpuCoreState && !out.amdgpu_core_state) {
            out.amdgpu_core_state = std::string(d);
            out.amdgpu_core_state_offset = file_offset + desc;
        }
        off = desc + pad4(descsz);
    }
}

namespace {

constexpr uint32_t kPnXnum = 0xffff, kShnXindex = 0xffff;
/// Program headers read at a time: memory stays bounded whatever e_phnum says.
constexpr uint64_t kPhdrChunk = 4096;

/// Calls `each(index, type, offset, filesz)` for every program header of `h`, read in chunks;
/// an error when the table lies outside the first `size` bytes or a PT_LOAD/PT_NOTE segment's
/// offset + size overflows.
Result<void> forEachPhdr(
    const ReadAt& read,
    uint64_t size,
    const ElfHead& h,
    const std::function<Result<void>(uint32_t, uint32_t, uint64_t, uint64_t)>& each) {
    if (uint64_t{h.phnum} * 56 > size || h.phoff > size - uint64_t{h.phnum} * 56)
        return std::unexpected(Error{fmt::format(
            "truncated: the program headers ({} at 0x{:x}) lie beyond the end of the file ({} "
            "bytes)",
            h.phnum,
            h.phoff,
            size)});
    for (uint64_t first = 0; first < h.phnum; first += kPhdrChunk) {
        uint64_t n = std::min<uint64_t>(kPhdrChunk, h.phnum - first);
        auto ph = readRange(read, size, h.phoff + first * 56, n * 56, "program headers");
        if (!ph) return std::unexpected(ph.error());
        for (uint64_t i = 0; i < n; ++i) {
            auto p = std::string_view(*ph).substr(i * 56, 56);
            uint32_t type = *le<uint32_t>(p, 0);
            uint64_t off = *le<uint64_t>(p, 8), filesz = *le<uint64_t>(p, 32);
            // Only segments with file bytes a reader uses (the kernel writes no others).
            if ((type == kPtLoad || type == kPtNote) && off > UINT64_MAX - filesz)
                return std::unexpected(Error{fmt::format(
                    "program header {} at offset {:#x} overflows: p_offset {:#x} + p_filesz {:#x}",
                    first + i,
                    h.phoff + (first + i) * 56,
                    off,
                    filesz)});
            if (auto r = each(static_cast<uint32_t>(first + i), type, off, filesz); !r) return r;
        }
    }
    return {};
}

}  // namespace

Result<ElfHead> readElfHead(const ReadAt& read, uint64_t file_size) {
    auto head = parseHead(read(0, 64));
    if (!head) return head;
    bool xnum = head->phnum == kPnXnum, xsh = head->shnum == 0 && head->shoff != 0,
         xstr = head->shstrndx == kShnXindex;
    if (!xnum && !xsh && !xstr) return head;
    // Extended numbering: section header 0 holds what did not fit in 16 bits.
    auto sh0 = readRange(read, file_size, head->shoff, 64, "section header 0 (extended numbering)");
    if (!sh0) return std::unexpected(sh0.error());
    if (xnum) head->phnum = *le<uint32_t>(*sh0, 44);
    if (xsh) {
        uint64_t n = *le<uint64_t>(*sh0, 32);
        if (n > UINT32_MAX)
            return std::unexpected(
                Error{fmt::format("section count {} (sh_size of section 0, at offset {:#x}) "
                                  "is no count",
                                  n,
                                  head->shoff + 32)});
        head->shnum = static_cast<uint32_t>(n);
    }
    if (xstr) head->shstrndx = *le<uint32_t>(*sh0, 40);
    return head;
}

CoreExtent coreExtent(const ReadAt& read, uint64_t available) {
    CoreExtent x;
    if (available < 64) {
        x.retry_at = 64;
        return x;
    }
    auto raw = parseHead(read(0, 64));
    if (!raw) return x;
    // Section header 0 first when it holds a count (Linux writes it after the segments).
    bool xnum = raw->phnum == kPnXnum || (raw->shnum == 0 && raw->shoff != 0) ||
                raw->shstrndx == kShnXindex;
    if (xnum && (raw->shoff > UINT64_MAX - 64 || raw->shoff + 64 > available)) {
        if (raw->shoff <= UINT64_MAX - 64) x.retry_at = raw->shoff + 64;
        x.needs_section_header0 = true;  // readElfHead() reads it for any of the three
        return x;
    }
    auto h = readElfHead(read, available);
    if (!h) return x;
    uint64_t end = 64;
    auto tableEnd = [](uint64_t off, uint64_t n, uint64_t entry) -> std::optional<uint64_t> {
        if (n > (UINT64_MAX - off) / entry) return std::nullopt;
        return off + n * entry;
    };
    auto phEnd = tableEnd(h->phoff, h->phnum, 56);
    auto shEnd = h->shoff ? tableEnd(h->shoff, h->shnum, 64) : std::optional<uint64_t>(0);
    if (!phEnd || !shEnd) return x;
    if (*phEnd > available || *shEnd > available) {
        x.retry_at = std::max(*phEnd, *shEnd);
        return x;
    }
    end = std::max({end, *phEnd, *shEnd});
    auto segs =
        forEachPhdr(read,
                    available,
                    *h,
                    [&](uint32_t, uint32_t type, uint64_t off, uint64_t filesz) -> Result<void> {
                        if (type == kPtLoad || type == kPtNote) end = std::max(end, off + filesz);
                        return {};
                    });
    if (!segs) return x;
    // Section headers read kPhdrChunk at a time, as program headers are.
    for (uint64_t first = 0; h->shoff && first < h->shnum; first += kPhdrChunk) {
        uint64_t n = std::min<uint64_t>(kPhdrChunk, h->shnum - first);
        auto sh = read(h->shoff + first * 64, static_cast<size_t>(n * 64));
        if (sh.size() != n * 64) return x;
        for (uint64_t i = 0; i < n; ++i) {
            auto s = std::string_view(sh).substr(i * 64, 64);
            uint32_t type = *le<uint32_t>(s, 4);
            uint64_t off = *le<uint64_t>(s, 24), size = *le<uint64_t>(s, 32);
            if (type == kShtNull || type == kShtNobits) continue;
            if (off > UINT64_MAX - size) continue;  // readCoreLayout() judges such a section
            end = std::max(end, off + size);
        }
    }
    x.end = end;
    return x;
}

Result<CoreLayout> readCoreLayout(const ReadAt& read, uint64_t file_size) {
    auto head = readElfHead(read, file_size);
    if (!head) return std::unexpected(head.error());
    auto kind = sniffCore(read(0, 64));
    if (!kind)
        return std::unexpected(Error{fmt::format("not a core file (ELF e_type {})", head->type)});
    CoreLayout c;
    c.kind = *kind;
    c.head = *head;
    c.file_size = file_size;
    uint64_t noteBytes = 0;
    auto segs =
        forEachPhdr(read,
                    file_size,
                    *head,
                    [&](uint32_t i, uint32_t type, uint64_t off, uint64_t filesz) -> Result<void> {
                        if (type != kPtLoad && type != kPtNote) return {};
                        c.needed_size = std::max(c.needed_size, off + filesz);
                        if (type != kPtNote) return {};
                        noteBytes += filesz;
                        if (noteBytes > kMaxNoteBytes)
                            return std::unexpected(
                                Error{fmt::format("notes larger than {} bytes", kMaxNoteBytes)});
                        auto n = readRange(read, file_size, off, filesz, "PT_NOTE segment");
                        if (!n)
                            return std::unexpected(
                                Error{fmt::format("{} (program header {})", n.error().message, i)});
                        parseNotes(*n, c.notes, off);
                        return {};
                    });
    if (!segs) return std::unexpected(segs.error());
    if (c.needed_size > file_size)  // cut while written (ulimit -c, a full disk): notes whole
        c.truncated = fmt::format(
            "truncated: its segments need {} bytes, the file has {}", c.needed_size, file_size);
    if (c.kind != CoreKind::Cpu && head->shnum && head->shnum <= kMaxSections) {
        auto sh =
            readRange(read, file_size, head->shoff, uint64_t{head->shnum} * 64, "section headers");
        if (!sh) return std::unexpected(sh.error());
        std::string strtab;
        uint64_t strtabOff = 0;
        if (head->shstrndx < head->shnum) {
            auto s = std::string_view(*sh).substr(head->shstrndx * 64u, 64);
            uint64_t off = *le<uint64_t>(s, 24), size = *le<uint64_t>(s, 32);
            strtabOff = off;
            auto t = readRange(
                read, file_size, off, std::min<uint64_t>(size, 16u << 20), "section names");
            if (!t) return std::unexpected(t.error());
            strtab = std::move(*t);
        }
        uint64_t names = 0, maxNames = 4 * strtab.size() + (64u << 20);
        for (uint32_t i = 0; i < head->shnum; ++i) {
            auto h = std::string_view(*sh).substr(i * 64u, 64);
            uint32_t name = *le<uint32_t>(h, 0), type = *le<uint32_t>(h, 4);
            // A forged table's names may all be one long run without a NUL: each name and
            // their sum are bounded (hostile review 151: 2 000 sections naming a 4 MiB run
            // needed 8 GB).
            c.sections.push_back(cstr(strtab, name, kMaxSectionNameBytes + 1));
            names += c.sections.back().size();
            if (c.sections.back().size() > kMaxSectionNameBytes || names > maxNames)
                return std::unexpected(Error{fmt::format(
                    "section {}: its name at offset {} of the section names (file offset {:#x}) "
                    "{}",
                    i,
                    name,
                    strtabOff + name,
                    c.sections.back().size() > kMaxSectionNameBytes
                        ? fmt::format("is longer than {} bytes", kMaxSectionNameBytes)
                        : fmt::format("brings the names past {} bytes, 4 times their table",
                                      maxNames))});
            c.places.push_back({*le<uint64_t>(h, 16),
                                *le<uint64_t>(h, 24),
                                *le<uint64_t>(h, 32),
                                *le<uint32_t>(h, 44),
                                *le<uint32_t>(h, 40),
                                *le<uint64_t>(h, 56),
                                type});
            // A hostile core's section must not make its readers read past it (they trust
            // offset and size): its bytes lie in the file, and its device range does not wrap.
            const auto& p = c.places.back();
            if (type != kShtNull && type != kShtNobits &&
                (p.offset > file_size || p.size > file_size - p.offset))
                return std::unexpected(Error{fmt::format(
                    "section {} ({}): offset {:#x} size {:#x} lie past the end of the file "
                    "({} bytes)",
                    i,
                    c.sections.back(),
                    p.offset,
                    p.size,
                    file_size)});
            if (p.size && p.addr + p.size < p.addr)
                return std::unexpected(
                    Error{fmt::format("section {} ({}): address {:#x} + size {:#x} wraps",
                                      i,
                                      c.sections.back(),
                                      p.addr,
                                      p.size)});
        }
    }
    return c;
}

std::string signalName(int signo) {
    static constexpr std::array<std::pair<int, std::string_view>, 12> kNames{{
        {SIGSEGV, "SIGSEGV"},
        {SIGABRT, "SIGABRT"},
        {SIGBUS, "SIGBUS"},
        {SIGILL, "SIGILL"},
        {SIGFPE, "SIGFPE"},
        {SIGTRAP, "SIGTRAP"},
        {SIGKILL, "SIGKILL"},
        {SIGQUIT, "SIGQUIT"},
        {SIGSYS, "SIGSYS"},
        {SIGXCPU, "SIGXCPU"},
        {SIGXFSZ, "SIGXFSZ"},
        {SIGTERM, "SIGTERM"},
    }};
    for (auto& [n, name] : kNames)
        if (n == signo) return std::string(name);
    return fmt::format("signal {}", signo);
}

std::string_view sigCodeName(int signo, int code) {
    if (code <= 0) {
        switch (code) {
            case 0:
                return "SI_USER";
            case -1:
                return "SI_QUEUE";
            case -6:
                return "SI_TKILL";
            default:
                return "";
        }
    }
    if (code == kSiKernel) return "SI_KERNEL";
    if (signo == SIGSEGV) {
        static constexpr std::string_view k[] = {
            "SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR"};
        return code <= 4 ? k[code - 1] : "";
    }
    if (signo == SIGBUS) {
        static constexpr std::string_view k[] = {
            "BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR", "BUS_MCEERR_AO"};
        return code <= 5 ? k[code - 1] : "";
    }
    if (signo == SIGILL && code <= 8) {
        static constexpr std::string_view k[] = {"ILL_ILLOPC",
                                                 "ILL_ILLOPN",
                                                 "ILL_ILLADR",
                                                 "ILL_ILLTRP",
                                                 "ILL_PRVOPC",
                                                 "ILL_PRVREG",
                                                 "ILL_COPROC",
                                                 "ILL_BADSTK"};
        return k[code - 1];
    }
    if (signo == SIGFPE && code <= 8) {
        static constexpr std::string_view k[] = {"FPE_INTDIV",
                                                 "FPE_INTOVF",
                                                 "FPE_FLTDIV",
                                                 "FPE_FLTOVF",
                                                 "FPE_FLTUND",
                                                 "FPE_FLTRES",
                                                 "FPE_FLTINV",
                                                 "FPE_FLTSUB"};
        return k[code - 1];
    }
    return "";
}

}  // namespace gpufault::coredump
