#include "collectors/coredump/unwind.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "collectors/common/demangle.h"

namespace gpufault::coredump {

namespace {

struct Context {
    Dwfl* dwfl = nullptr;
    const UnwindOptions* opt = nullptr;
    std::optional<int64_t> crashing;
    CoreStack stack;
    Thread* current = nullptr;
};

std::string hex(const unsigned char* p, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += fmt::format("{:02x}", p[i]);
    return s;
}

void describe(Context& c, Dwfl_Module* m, Dwarf_Addr pc, Dwarf_Addr adjusted, Frame& f) {
    Dwarf_Addr bias = 0;
    bool hasFile = dwfl_module_getelf(m, &bias) != nullptr;
    Dwarf_Addr start = 0;
    const char* name =
        dwfl_module_info(m, nullptr, &start, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (name) f.module = name;
    f.module_offset = pc - start;
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    if (int n = dwfl_module_build_id(m, &bits, &vaddr); n > 0) f.build_id = hex(bits, n);
    if (!hasFile) {
        auto& missing = c.stack.modules_without_file;
        if (name && std::find(missing.begin(), missing.end(), name) == missing.end())
            missing.emplace_back(name);
        return;
    }
    GElf_Off off = 0;
    GElf_Sym sym;
    if (const char* s = dwfl_module_addrinfo(m, adjusted, &off, &sym, nullptr, nullptr, nullptr)) {
        std::string_view name(s);
        f.symbol = demangle(name.substr(0, name.find('@')));  // `__libc_start_main@@GLIBC_2.34`
        f.symbol_offset = off + (pc - adjusted);
    }
    if (Dwfl_Line* line = dwfl_module_getsrc(m, adjusted)) {
        int lineno = 0;
        if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
            f.file = file;
            if (lineno > 0) f.line = lineno;
        }
    }
}

int onFrame(Dwfl_Frame* state, void* arg) {
    auto& c = *static_cast<Context*>(arg);
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
    if (Dwfl_Module* m = dwfl_addrmodule(c.dwfl, adjusted)) describe(c, m, pc, adjusted, f);
    c.current->frames.push_back(std::move(f));
    return DWARF_CB_OK;
}

int onThread(Dwfl_Thread* t, void* arg) {
    auto& c = *static_cast<Context*>(arg);
    if (c.stack.threads.size() >= c.opt->max_threads) {
        c.stack.threads_truncated = true;
        return DWARF_CB_ABORT;
    }
    Thread th;
    th.tid = dwfl_thread_tid(t);
    th.crashed = c.crashing && *c.crashing == th.tid;
    c.current = &th;
    int r = dwfl_thread_getframes(t, onFrame, &c);
    if (int e = dwfl_errno(); r < 0 && !th.error && e != 0) th.error = dwfl_errmsg(e);
    c.stack.threads.push_back(std::move(th));
    c.current = nullptr;
    return DWARF_CB_OK;
}

Error dwflError(std::string_view what) {
    return Error{fmt::format("{}: {}", what, dwfl_errmsg(-1))};
}

}  // namespace

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
    std::string search = debuginfoSearchPath(opt.debuginfo_path);
    char* searchPtr = search.data();
    Dwfl_Callbacks cb{};
    cb.find_elf = dwfl_build_id_find_elf;
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
    dwfl_report_begin(dwfl);
    if (dwfl_core_file_report(dwfl, elf, opt.exe ? opt.exe->c_str() : nullptr) < 0) {
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
    c.crashing = crashing_tid;
    if (dwfl_getthreads(dwfl, onThread, &c) < 0 && c.stack.threads.empty()) {
        auto e = dwflError("dwfl_getthreads");
        cleanup();
        return std::unexpected(e);
    }
    cleanup();
    return std::move(c.stack);
}

Result<CoreStack> unwindCore(const std::string& path,
                             const UnwindOptions& opt,
                             std::optional<int64_t> crashing_tid,
                             const ChildLimits& limits) {
    auto out = runInChild(
        [&] {
            auto r = unwindInProcess(path, opt, crashing_tid);
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
