#include "collectors/coredump/unwind.h"

#include <elf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "collectors/common/demangle.h"
#include "collectors/coredump/exe_check.h"
#include "collectors/coredump/open_guard.h"
#include "collectors/coredump/signature.h"

namespace gpufault::coredump {

namespace {

/// What a frame needs of its module, found once per module.
struct ModuleInfo {
    std::optional<std::string> name;
    Dwarf_Addr start = 0;
    std::optional<std::string> build_id;
    bool has_file = false;
    bool c_library = false;
};

/// Symbol and source line of one looked-up address (pc, or pc − 1 in caller frames).
struct Symbolized {
    std::optional<std::string> symbol;
    GElf_Off offset = 0;  ///< from the symbol's start to the looked-up address
    std::optional<std::string> file;
    std::optional<int64_t> line;
};

struct Context {
    Dwfl* dwfl = nullptr;
    const UnwindOptions* opt = nullptr;
    std::optional<int64_t> crashing;
    CoreStack stack;
    Thread* current = nullptr;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    bool late = false;  ///< the deadline passed: no further thread is unwound
    size_t total = 0;   ///< threads seen in the core
    bool cut = false;   ///< the thread in progress was stopped by the deadline
    // Threads of one process share most return addresses (64 threads parked in one wait);
    // libdwfl's symbol lookup scans the module's whole symbol table on every call.
    std::unordered_map<Dwfl_Module*, ModuleInfo> modules;
    std::unordered_map<Dwarf_Addr, Symbolized> symbols;
};

std::string hex(const unsigned char* p, int n) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s;
    s.reserve(static_cast<size_t>(n) * 2);
    for (int i = 0; i < n; ++i) {
        s += kDigits[p[i] >> 4];
        s += kDigits[p[i] & 15];
    }
    return s;
}

const ModuleInfo& moduleInfo(Context& c, Dwfl_Module* m) {
    auto [it, fresh] = c.modules.try_emplace(m);
    if (!fresh) return it->second;
    auto& info = it->second;
    Dwarf_Addr bias = 0;
    info.has_file = dwfl_module_getelf(m, &bias) != nullptr;
    const char* name =
        dwfl_module_info(m, nullptr, &info.start, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (name) info.name = name;
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    if (int n = dwfl_module_build_id(m, &bits, &vaddr); n > 0) info.build_id = hex(bits, n);
    // No source lines for the C library, loader and vDSO: their frames are generic (dropped
    // from signatures) and their DWARF (libc6-dbg: 2.3 MiB of .debug_info, compressed) costs
    // more to inflate than unwinding and symbolizing the rest of a core (docs/performance.md).
    info.c_library = name && isCLibraryModule(name);
    if (!info.has_file && name) c.stack.modules_without_file.emplace_back(name);
    return info;
}

const Symbolized& symbolize(Context& c, Dwfl_Module* m, const ModuleInfo& info, Dwarf_Addr a) {
    auto [it, fresh] = c.symbols.try_emplace(a);
    if (!fresh || !info.has_file) return it->second;
    auto& out = it->second;
    GElf_Sym sym;
    if (const char* s = dwfl_module_addrinfo(m, a, &out.offset, &sym, nullptr, nullptr, nullptr)) {
        std::string_view name(s);
        out.symbol = demangle(name.substr(0, name.find('@')));  // `__libc_start_main@@GLIBC_2.34`
    }
    if (info.c_library) return out;
    if (Dwfl_Line* line = dwfl_module_getsrc(m, a)) {
        int lineno = 0;
        if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
            out.file = file;
            if (lineno > 0) out.line = lineno;
        }
    }
    return out;
}

void describe(Context& c, Dwfl_Module* m, Dwarf_Addr pc, Dwarf_Addr adjusted, Frame& f) {
    const auto& info = moduleInfo(c, m);
    f.module = info.name;
    f.module_offset = pc - info.start;
    f.build_id = info.build_id;
    const auto& s = symbolize(c, m, info, adjusted);
    f.symbol = s.symbol;
    if (s.symbol) f.symbol_offset = s.offset + (pc - adjusted);
    f.file = s.file;
    f.line = s.line;
}

/// A frame in no module libdwfl reported (a core without its executable's ELF headers and no
/// file for it: libdwfl finds no module at all): its module and offset from the core's file
/// mappings (NT_FILE), so the frame still reads `nbmain + 0x1135` and a signature does not
/// depend on where ASLR put it. Defined below (it reads the unwind's LayoutCheck).
void describeFromMappings(Dwarf_Addr pc, Dwarf_Addr adjusted, Frame& f);

/// True once the deadline has passed; the first thread unwound (the crashing one) is exempt.
bool pastDeadline(Context& c) {
    if (c.current && c.current->crashed) return false;
    if (c.stack.threads.empty()) return false;
    if (!c.late && std::chrono::steady_clock::now() >= c.deadline) c.late = true;
    return c.late;
}

int onFrame(Dwfl_Frame* state, void* arg) {
    auto& c = *static_cast<Context*>(arg);
    if (pastDeadline(c)) {
        c.cut = true;
        return DWARF_CB_ABORT;
    }
    if (c.current->frames.size() >= c.opt->max_frames) {
        c.current->frames_truncated = true;
        return DWARF_CB_ABORT;
    }
    Dwarf_Addr pc = 0;
    bool activation = false;
    if (!dwfl_frame_pc(state, &pc, &activation)) {
        c.current->error = dwfl_errmsg(-1);
        return DWARF_CB_ABORT;
    }
    // systemd-coredump's convention: a caller frame's pc is a return address, so its symbol
    // and line are those of pc − 1 (the call instruction).
    Dwarf_Addr adjusted = pc - (activation ? 0 : 1);
    Frame f;
    f.pc = pc;
    f.activation = activation;
    if (Dwfl_Module* m = dwfl_addrmodule(c.dwfl, adjusted))
        describe(c, m, pc, adjusted, f);
    else
        describeFromMappings(pc, adjusted, f);
    c.current->frames.push_back(std::move(f));
    return DWARF_CB_OK;
}

/// Unwinds one thread into c.stack (dropped when the deadline cut it).
void unwindThread(Context& c, Thread th, const std::function<int()>& getframes) {
    c.current = &th;
    c.cut = false;
    int r = getframes();
    if (int e = dwfl_errno(); r < 0 && !th.error && e != 0) th.error = dwfl_errmsg(e);
    c.current = nullptr;
    if (!c.cut) c.stack.threads.push_back(std::move(th));
}

int onThread(Dwfl_Thread* t, void* arg) {
    auto& c = *static_cast<Context*>(arg);
    pid_t tid = dwfl_thread_tid(t);
    bool crashedDone = c.crashing && *c.crashing == tid && !c.stack.threads.empty() &&
                       c.stack.threads.front().crashed;
    if (crashedDone) return DWARF_CB_OK;  // unwound first; counted there
    ++c.total;
    // Past the deadline the rest are only counted (reading their notes costs next to nothing).
    if (c.late || pastDeadline(c)) return DWARF_CB_OK;
    if (c.stack.threads.size() >= c.opt->max_threads) {  // the rest are only counted
        c.stack.threads_truncated = true;
        return DWARF_CB_OK;
    }
    Thread th;
    th.tid = tid;
    th.crashed = c.crashing && *c.crashing == tid;
    unwindThread(c, std::move(th), [&] { return dwfl_thread_getframes(t, onFrame, &c); });
    return DWARF_CB_OK;
}

/// What findCheckedElf checks against (one unwind on this thread at a time).
struct LayoutCheck {
    std::vector<MappedFile> maps;      ///< the core's NT_FILE mappings
    std::vector<std::string> refused;  ///< CoreStack::modules_refused
};
thread_local LayoutCheck* t_layout = nullptr;

void describeFromMappings(Dwarf_Addr pc, Dwarf_Addr adjusted, Frame& f) {
    if (!t_layout) return;
    for (const auto& m : t_layout->maps) {
        if (adjusted < m.start || adjusted >= m.end) continue;
        // The module's base: the start of its mapping of file offset 0 (as libdwfl's module
        // start), else the lowest mapping of that path.
        uint64_t base = m.start - m.file_offset;
        for (const auto& n : t_layout->maps)
            if (n.path == m.path && n.file_offset == 0) base = std::min<uint64_t>(base, n.start);
        f.module = m.path;
        f.module_offset = pc - base;
        return;
    }
}

/// libdwfl's find_elf: dwfl_build_id_find_elf, then, for a module whose build-id the core does
/// not keep (libdwfl cannot tell a replaced file then), the check the executable gets: the
/// file's segments against the core's mappings of its path. A file that does not fit is not
/// used (the module is reported by offset, or from the core's memory).
int findCheckedElf(Dwfl_Module* mod,
                   void** userdata,
                   const char* modname,
                   Dwarf_Addr base,
                   char** file_name,
                   Elf** elfp) {
    // libdwfl opens the recorded path blocking: a FIFO or device planted there would hold the
    // unwind until its time limit and cost the whole core. Only regular files are read.
    struct stat st {};
    if (modname && *modname && ::stat(modname, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (t_layout)
            t_layout->refused.push_back(
                fmt::format("{}: not a regular file (mode {:o}): not used", modname, st.st_mode));
        return -1;
    }
    int fd = dwfl_build_id_find_elf(mod, userdata, modname, base, file_name, elfp);
    if (fd < 0 || !t_layout || !modname || !file_name || !*file_name) return fd;
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    if (dwfl_module_build_id(mod, &bits, &vaddr) > 0) return fd;  // matched by build-id
    std::vector<MappedFile> maps;
    for (const auto& m : t_layout->maps)
        if (m.path == modname) maps.push_back(m);
    if (maps.empty()) return fd;
    auto why = fileLayoutMismatch(*file_name, maps);
    if (!why) return fd;
    t_layout->refused.push_back(
        fmt::format("{}: the file at {} does not fit the core's mappings (no build-id to compare): "
                    "{}: not used",
                    modname,
                    *file_name,
                    *why));
    ::close(fd);
    std::free(*file_name);
    *file_name = nullptr;
    if (elfp && *elfp) {
        elf_end(*elfp);
        *elfp = nullptr;
    }
    return -1;
}

Error dwflError(std::string_view what) {
    return Error{fmt::format("{}: {}", what, dwfl_errmsg(-1))};
}

}  // namespace

double childDeadline(double limit) {
    return limit - std::min(5.0, limit * 0.1);
}

std::string debuginfoSearchPath(const std::vector<std::string>& dirs) {
    std::string out;
    for (const auto& d : dirs) {
        size_t pos = 0;
        while (pos <= d.size()) {
            size_t colon = d.find(':', pos);
            if (colon == std::string::npos) colon = d.size();
            auto part = d.substr(pos, colon - pos);
            if (!part.empty()) {
                std::error_code ec;
                auto abs = std::filesystem::absolute(part, ec);
                out += (ec ? part : abs.lexically_normal().string()) + ":";
            }
            pos = colon + 1;
        }
    }
    return out + ":.debug:/usr/lib/debug";
}

Result<CoreStack> unwindInProcess(const std::string& path,
                                  const UnwindOptions& opt,
                                  std::optional<int64_t> crashing_tid) {
    auto start = std::chrono::steady_clock::now();
    std::string search = debuginfoSearchPath(opt.debuginfo_path);
    char* searchPtr = search.data();
    Dwfl_Callbacks cb{};
    cb.find_elf = findCheckedElf;
    cb.find_debuginfo = dwfl_standard_find_debuginfo;
    cb.debuginfo_path = &searchPtr;
    elf_version(EV_CURRENT);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::unexpected(Error{fmt::format("open: {}", std::strerror(errno))});
    // ELF_C_READ: segments are read on demand (a mapping of a many-GiB core would count
    // against the address-space limit).
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    Dwfl* dwfl = elf ? dwfl_begin(&cb) : nullptr;
    auto cleanup = [&] {
        if (dwfl) dwfl_end(dwfl);
        if (elf) elf_end(elf);
        ::close(fd);
    };
    if (!elf || !dwfl) {
        cleanup();
        return std::unexpected(Error{fmt::format("libelf: {}", elf_errmsg(-1))});
    }
    // libdwfl opens the core's file names blocking (also in checkExe's probe of the core).
    RegularOpensOnly regular_only;
    // --exe is checked as a file found at the core's recorded path is (by build-id): the wrong
    // executable would give another program's symbols.
    std::optional<std::string> exe = opt.exe;
    ExeCheck exe_check;
    if (exe) {
        exe_check = checkExe(elf, cb, *exe);
        if (exe_check.refused) exe.reset();
    } else if (auto named = coreExePath(elf); named && !coreKeepsExeBuildId(elf, cb)) {
        // A core without its executable's ELF headers (coredump_filter without bit 4): libdwfl
        // finds no module of it alone, and every frame would be a bare address (hostile 17, i4
        // H1). The file at the path the core names is used as --exe would be, when its
        // segments fit the core's mappings; a regular file only (a FIFO there would block).
        struct stat st {};
        if (::stat(named->c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
            auto check =
                checkExe(elf, cb, *named, "the file at the core's executable path " + *named);
            if (!check.refused) {
                exe = *named;
                exe_check = check;
            }
        }
    }
    // Module files are opened lazily (symbols, CFI): the check stays on until the end.
    LayoutCheck layout{coreFileMappings(elf), {}};
    t_layout = &layout;
    struct Off {
        ~Off() { t_layout = nullptr; }
    } off;
    dwfl_report_begin(dwfl);
    if (dwfl_core_file_report(dwfl, elf, exe ? exe->c_str() : nullptr) < 0) {
        auto e = dwflError("dwfl_core_file_report");
        cleanup();
        return std::unexpected(e);
    }
    dwfl_report_end(dwfl, nullptr, nullptr);
    if (dwfl_core_file_attach(dwfl, elf) < 0) {
        auto e = dwflError("dwfl_core_file_attach");
        cleanup();
        return std::unexpected(e);
    }
    Context c;
    c.dwfl = dwfl;
    c.opt = &opt;
    c.stack.exe_refused = exe_check.refused;
    c.stack.exe_unverified = exe_check.unverified;
    c.stack.exe_named = exe_check.core_exe;
    c.crashing = crashing_tid;
    if (opt.seconds)
        c.deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(std::max(0.0, *opt.seconds)));
    // The crashing thread first: it is what the signature and `show` need, and it is unwound
    // whatever the deadline says.
    if (crashing_tid && opt.max_threads > 0) {
        Thread th;
        th.tid = *crashing_tid;
        th.crashed = true;
        unwindThread(c, std::move(th), [&] {
            return dwfl_getthread_frames(dwfl, static_cast<pid_t>(*crashing_tid), onFrame, &c);
        });
        ++c.total;
    }
    if (dwfl_getthreads(dwfl, onThread, &c) < 0 && c.stack.threads.empty()) {
        auto e = dwflError("dwfl_getthreads");
        cleanup();
        return std::unexpected(e);
    }
    cleanup();
    c.stack.modules_refused = std::move(layout.refused);
    if (c.late) {
        c.stack.threads_truncated = true;
        c.stack.partial = fmt::format("unwind limit reached after {} of {} threads ({:g} s)",
                                      c.stack.threads.size(),
                                      c.total,
                                      *opt.seconds);
    }
    return std::move(c.stack);
}

Result<CoreStack> unwindCore(const std::string& path,
                             const UnwindOptions& opt,
                             std::optional<int64_t> crashing_tid,
                             const ChildLimits& limits) {
    UnwindOptions own = opt;
    own.seconds = std::min(opt.seconds.value_or(limits.seconds), childDeadline(limits.seconds));
    auto out = runInChild(
        [&] {
            auto r = unwindInProcess(path, own, crashing_tid);
            nlohmann::json j = r ? nlohmann::json{{"stack", toJson(*r)}}
                                 : nlohmann::json{{"error", r.error().message}};
            return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        },
        limits);
    if (!out) return std::unexpected(out.error());
    auto j = nlohmann::json::parse(*out, nullptr, false);
    if (j.is_discarded()) return std::unexpected(Error{"the reader's result is not JSON"});
    if (j.contains("error")) return std::unexpected(Error{j["error"].get<std::string>()});
    auto s = j.contains("stack") ? stackFromJson(j["stack"]) : std::nullopt;
    if (!s) return std::unexpected(Error{"the reader's result has no stack"});
    return std::move(*s);
}

}  // namespace gpufault::coredump
