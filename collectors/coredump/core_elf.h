// ELF core files read without libelf: the header, the program headers, the notes the kernel
// writes (NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO, NT_FILE) and, for GPU cores, section names.
// Sources: the System V gABI (ELF-64), Linux fs/binfmt_elf.c (fill_note_info, fill_files_note,
// fill_prstatus, fill_psinfo) and include/uapi/linux/elfcore.h for the 64-bit layouts.
// Pure: all bytes come through a ReadAt callback, so tests feed buffers built in memory.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufault::coredump {

/// A core that cannot be read: what is wrong (the caller adds the file name).
struct Error {
    std::string message;
};
template <class T>
using Result = std::expected<T, Error>;

/// Reads up to `n` bytes at file offset `off` (fewer at the end of the file, none past it).
using ReadAt = std::function<std::string(uint64_t off, size_t n)>;

inline constexpr uint16_t kEtCore = 4;      ///< ET_CORE
inline constexpr uint16_t kEmAmdgpu = 224;  ///< EM_AMDGPU: ROCr GPU cores (gpucore.<pid>)
inline constexpr uint16_t kEmCuda = 190;    ///< EM_CUDA: CUDA GPU cores

/// What kind of core a file is.
enum class CoreKind { Cpu, RocrGpu, CudaGpu };
std::string_view coreKindName(CoreKind k);  ///< "cpu", "rocr_gpu", "cuda_gpu"

/// The kind of core the first bytes of a file (at least 64) show: an ELF with e_type ET_CORE,
/// or e_machine EM_AMDGPU / EM_CUDA; nullopt for anything else (a log, an executable).
std::optional<CoreKind> sniffCore(std::string_view head);

/// For the first bytes of a file (at least 20, or the whole file) that start with the ELF magic
/// but are no core: what it is (`an executable (ELF e_type 2), not a core`, `a cut ELF header
/// (6 bytes): not a core`); nullopt for a core or anything that is not ELF.
std::optional<std::string> notACore(std::string_view head);

/// One file mapping from NT_FILE: [start, end) in the process, file offset in bytes.
struct MappedFile {
    uint64_t start = 0, end = 0, file_offset = 0;
    std::string path;
};

/// NT_SIGINFO (siginfo_t, 64-bit layout): the signal that killed the process.
struct SigInfo {
    int signo = 0;
    int code = 0;                   ///< si_code: > 0 sent by the kernel (SEGV_MAPERR = 1 …)
    /// si_addr of a kernel-sent SIGSEGV or SIGBUS (the data address), SIGILL, SIGFPE or
    /// SIGTRAP (the instruction's address); none for SI_KERNEL (a general-protection fault:
    /// the kernel states no address) nor for signals sent by a process.
    std::optional<uint64_t> addr;
    std::optional<int64_t> sender;  ///< si_pid for signals sent by a process (kill, abort)
};

/// What the notes state (never the environment: NT_AUXV and the stack are not read).
struct CoreNotes {
    std::optional<int64_t> pid, ppid, uid;  ///< NT_PRPSINFO (pid as the process saw it)
    std::string comm;                       ///< NT_PRPSINFO pr_fname (≤ 15 characters)
    std::vector<int64_t> tids;  ///< NT_PRSTATUS pr_pid in note order: [0] is the crashing thread
    /// The first NT_PRSTATUS (the crashing thread's, as the kernel writes them) named no pid: a
    /// forged or damaged core. `tids` then holds the others, none of which crashed.
    bool crashing_unknown = false;
    bool prstatus_seen = false;  ///< an NT_PRSTATUS was parsed (the first one decides)
    /// The crashing thread's id: tids[0], unless crashing_unknown.
    std::optional<int64_t> crashingTid() const {
        if (crashing_unknown || tids.empty()) return std::nullopt;
        return tids.front();
    }
    std::optional<int> cursig;  ///< pr_cursig of the crashing thread
    std::optional<SigInfo> siginfo;
    std::vector<MappedFile> files;  ///< NT_FILE, in address order (the first kMaxMappedFiles)
    uint64_t files_stated = 0;      ///< NT_FILE's count: more than files.size() when capped
    /// ROCr GPU cores: the descriptor of the first note named "AMDGPU" of type
    /// NT_AMDGPU_CORE_STATE (33), as written (ROCr's amd_core_dump.cpp; decoded by
    /// readRocrCoreState, rocr_core_state.h). At most kMaxNoteBytes, as every note.
    std::optional<std::string> amdgpu_core_state;
    uint64_t amdgpu_core_state_offset = 0;  ///< where that descriptor starts in the core file
};

/// ELF header fields a core reader needs.
struct ElfHead {
    uint16_t type = 0, machine = 0;
    uint32_t flags = 0;
    uint8_t os_abi = 0, abi_version = 0;
    uint64_t phoff = 0, shoff = 0;
    /// Counts and the names' section as they are, extended numbering resolved: with e_phnum
    /// PN_XNUM (0xffff), e_shnum 0 or e_shstrndx SHN_XINDEX (0xffff) the value is in section
    /// header 0 (sh_info, sh_size, sh_link; gABI; Linux binfmt_elf.c fill_extnum_info writes it
    /// for cores of 65 535 segments or more).
    uint32_t phnum = 0, shnum = 0, shstrndx = 0;
};

/// A core's structure: header, notes, section names (GPU cores), and how many bytes its
/// segments need (a file shorter than that was truncated while it was written).
struct CoreLayout {
    CoreKind kind = CoreKind::Cpu;
    ElfHead head;
    uint64_t file_size = 0;
    uint64_t needed_size = 0;  ///< max(p_offset + p_filesz) over PT_LOAD and PT_NOTE
    /// Set when the file is shorter than needed_size (its notes are whole): "truncated: its
    /// segments need N bytes, the file has M". Memory past the end reads as missing.
    std::optional<std::string> truncated;
    CoreNotes notes;
    std::vector<std::string> sections;  ///< section names (GPU cores keep theirs; CPU cores none)
    /// Where each of `sections` lies: address (sh_addr), file offset and size, in bytes; its
    /// sh_link, sh_info and row size (sh_entsize, bytes; 0 when not a table).
    struct Place {
        uint64_t addr = 0, offset = 0, size = 0;
        uint32_t info = 0;  ///< sh_info
        uint32_t link = 0;  ///< sh_link
        uint64_t entsize = 0;
        uint32_t type = 0;  ///< sh_type (SHT_NULL 0 and SHT_NOBITS 8 have no bytes in the file)
        /// Whether offset and size name bytes of the file (readCoreLayout checked them for
        /// every type but SHT_NULL and SHT_NOBITS, whose offset and size may be anything).
        bool hasBytes() const { return type != 0 && type != 8; }
    };
    std::vector<Place> places;  ///< parallel to `sections`
};

/// Bounds of forged numeric fields in crash reports: beyond them a value is stored as unknown.
inline constexpr int64_t kPidMaxLimit = int64_t{1} << 22;  ///< the kernel's PID_MAX_LIMIT
/// The largest pid Linux gives (pids are below PID_MAX_LIMIT).
inline constexpr int64_t kMaxPid = kPidMaxLimit - 1;
inline constexpr int kMaxSignal = 64;                      ///< SIGRTMAX on Linux
/// si_code SI_KERNEL: a signal the kernel raised with no address, e.g. a SIGSEGV for a
/// general-protection fault (a non-canonical pointer such as 0xdead000000000000).
inline constexpr int kSiKernel = 0x80;
/// 9999-12-31T23:59:59Z, UTC seconds: the last time a stored timestamp may name.
inline constexpr int64_t kMaxEpochSeconds = 253402300799;

/// NT_AMDGPU_CORE_STATE: the type of ROCr's "AMDGPU" note holding KFD's snapshot of the
/// runtime, agents and queues (ROCm/ROCR-Runtime runtime/hsa-runtime/inc/amd_hsa_elf.h).
inline constexpr uint32_t kNtAmdgpuCoreState = 33;

/// Limits on what a (possibly hostile) core may make the reader allocate.
inline constexpr uint64_t kMaxNoteBytes = 64ull << 20;
/// NT_FILE mappings kept: 4 × vm.max_map_count's default (65 530); a 64 MiB note could list
/// 2.8 million (hostile review 148: 1.8 million took 480 MB).
inline constexpr uint64_t kMaxMappedFiles = 262144;
inline constexpr uint32_t kMaxSections = 65536;
/// The longest section name of a GPU core (`.cudbg.relfimg.dev0.0` …), in bytes; a longer one,
/// or names of more than 4 times their table + 64 MiB in all (sections of one name
/// repeat it: one `.cudbg.relfimg.devD.ctxC` per module), makes readCoreLayout() refuse it.
inline constexpr size_t kMaxSectionNameBytes = 4096;

/// Reads the ELF64 little-endian header of a core of `file_size` bytes, extended numbering
/// resolved (section header 0 read through `read`). Errors: not ELF, 32-bit, big-endian, bad
/// entry sizes, section header 0 outside the file.
Result<ElfHead> readElfHead(const ReadAt& read, uint64_t file_size);

/// Where a core's content ends as its headers state it, in bytes: the end of the ELF header,
/// the program and section header tables, every PT_LOAD and PT_NOTE segment and every section
/// with bytes. Computed once the first `available` bytes of the file can be read (a file being
/// written, e.g. decompressed): `end` is set when every table it needs lies in them, else
/// `retry_at` is how many bytes must be there before it can be known. `end` stays unset for
/// anything that is no readable core header (the reader says why later).
struct CoreExtent {
    std::optional<uint64_t> end;
    uint64_t retry_at = UINT64_MAX;
    /// `retry_at` waits for section header 0, which holds a count or the names' index
    /// (extended numbering): a file cut before it cannot be read at all.
    bool needs_section_header0 = false;
};
CoreExtent coreExtent(const ReadAt& read, uint64_t available);

/// Reads and checks the structure of the ELF64 little-endian core of `file_size` bytes. Errors:
/// not an ELF core, a 32-bit or big-endian core, headers or notes outside the file. A file
/// shorter than its segments whose notes are whole is read, with CoreLayout::truncated set.
Result<CoreLayout> readCoreLayout(const ReadAt& read, uint64_t file_size);

/// Parses the note records of one PT_NOTE segment into `out` (pure; bounds-checked).
/// `file_offset`: where the segment starts in the core (descriptor offsets kept are the file's).
void parseNotes(std::string_view notes, CoreNotes& out, uint64_t file_offset = 0);

/// The signal's name (`SIGSEGV`); "signal N" for others.
std::string signalName(int signo);
/// The si_code's name for the kernel-sent codes of SIGSEGV/SIGBUS/SIGILL/SIGFPE and the
/// SI_* user codes (`SEGV_MAPERR`, `SI_TKILL`); "" when unknown.
std::string_view sigCodeName(int signo, int code);

}  // namespace gpufault::coredump
