#include "collectors/coredump/core_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

namespace gpufault::coredump {

namespace {

std::string preadAt(int fd, uint64_t off, size_t n) {
    std::string s(n, '\0');
    size_t got = 0;
    while (got < n) {
        ssize_t r = ::pread(fd, s.data() + got, n - got, static_cast<off_t>(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += static_cast<size_t>(r);
    }
    s.resize(got);
    return s;
}

}  // namespace

Result<int> openRegular(const std::string& path, bool follow_links) {
    int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow_links ? 0 : O_NOFOLLOW);
    int fd = ::open(path.c_str(), flags);
    if (fd < 0) return std::unexpected(Error{path + ": " + std::strerror(errno)});
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return std::unexpected(Error{path + ": not a regular file"});
    }
    return fd;
}

bool isCoreFile(const std::string& path) {
    // Only regular files are probed: opening a FIFO would block or eat its writer's data.
    auto fd = openRegular(path);
    if (!fd) return false;
    auto head = preadAt(*fd, 0, 64);
    ::close(*fd);
    return sniffCore(head).has_value();
}

Result<CoreReport> readCore(const std::string& path, const ReadOptions& opt) {
    auto t0 = std::chrono::steady_clock::now();
    auto fail = [&](const std::string& m) { return std::unexpected(Error{path + ": " + m}); };
    auto opened = openRegular(path, opt.follow_links);
    if (!opened) return std::unexpected(opened.error());
    int fd = *opened;
    struct stat st {};
    (void)::fstat(fd, &st);
    ReadAt read = [fd](uint64_t off, size_t n) { return preadAt(fd, off, n); };
    auto layout = readCoreLayout(read, static_cast<uint64_t>(st.st_size));
    struct Close {
        int fd;
        ~Close() { ::close(fd); }
    } closer{fd};
    if (!layout) return fail(layout.error().message);
    CoreReport r;
    r.path = path;
    r.size = static_cast<uint64_t>(st.st_size);
    r.mtime = st.st_mtim.tv_sec;
    r.layout = std::move(*layout);
    r.runtimes = runtimeVersions(r.layout.notes.files);
    if (r.layout.kind == CoreKind::Cpu) {
        if (r.layout.notes.tids.empty()) return fail("no NT_PRSTATUS note: no thread to unwind");
        // A damaged first NT_PRSTATUS: no thread is marked as the crashing one.
        auto s = unwindCore(path, opt.unwind, r.layout.notes.crashingTid(), opt.limits);
        // Without a stack the notes still say who crashed, with which signal and where.
        if (!s && !r.layout.truncated) r.unwind_error = "unwinding failed: " + s.error().message;
        if (s) r.stack = std::move(*s);
        if (auto* t = r.stack ? crashingThread(*r.stack) : nullptr) {
            // The signature names the executable as the core does (NT_FILE), not by the name
            // of the file given with --exe: the same crash has one signature with or without it.
            auto frames = t->frames;
            if (opt.unwind.exe && !r.stack->exe_refused) {
                auto given = std::filesystem::path(*opt.unwind.exe).filename();
                for (auto& f : frames) {
                    if (!f.module || std::filesystem::path(*f.module).filename() != given) continue;
                    for (const auto& m : r.layout.notes.files)
                        if (f.pc >= m.start && f.pc < m.end) {
                            f.module = m.path;
                            break;
                        }
                }
            }
            r.signature = stackSignature(frames, opt.signature_depth);
        }
    } else {
        r.gpu = gpuCoreMeta(
            r.layout, std::filesystem::path(opt.name.value_or(path)).filename().string(), &read);
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace gpufault::coredump
