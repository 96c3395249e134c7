// libgpufault-preload.so: the record writer (one write(2) per record, no allocation on the hot
// path), the per-process file (checked before each record), fork handling and native stacks
// (libunwind). Real-function lookup: real.cpp; call nesting: scope.cpp. Format: docs/preload.md.
#include <dlfcn.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "collectors/preload/shim.h"

namespace gpufault::preload {

namespace {

constexpr int kMaxFrames = 16;
int g_fd = -1;    // the record file of this process; -1: not opened yet
dev_t g_dev = 0;  // its device and inode: the descriptor is ours only while they match
ino_t g_ino = 0;
char g_path[1024];        // its name, for reopening it when the program closed our descriptor
bool g_disabled = false;  // opening or writing failed: stop trying
int g_frames = 8;         // frames per record (GPUFAULT_ALLOC_FRAMES, 0–16)
pthread_mutex_t g_open_mu = PTHREAD_MUTEX_INITIALIZER;
using BacktraceFn = int (*)(void**, int);
BacktraceFn g_backtrace = nullptr;  // libunwind's unw_backtrace, loaded RTLD_LOCAL
void* g_self_base = nullptr;        // our own load address (frames and lookups skip it)

/// A fixed buffer that a record is formatted into (truncated, never overflowed). The last byte
/// is kept for the newline (end()), so a record that does not fit still ends its line.
struct Line {
    static constexpr size_t kCap = 1536;
    char buf[kCap];
    size_t n = 0;
    /// Bytes that may still be put before the newline.
    size_t room() const { return kCap - 1 - n; }
    void put(const char* s) {
        while (*s && n < kCap - 1) buf[n++] = *s++;
    }
    void putc(char c) {
        if (n < kCap - 1) buf[n++] = c;
    }
    /// Ends the record: the newline always fits.
    void end() { buf[n++] = '\n'; }
    void dec(uint64_t v) {
        char t[24];
        int i = 0;
        do t[i++] = static_cast<char>('0' + v % 10);
        while ((v /= 10) != 0);
        while (i > 0) putc(t[--i]);
    }
    void sdec(int64_t v) {
        if (v < 0) {
            putc('-');
            dec(static_cast<uint64_t>(-(v + 1)) + 1);
        } else {
            dec(static_cast<uint64_t>(v));
        }
    }
    void hex(uint64_t v) {
        put("0x");
        char t[16];
        int i = 0;
        do t[i++] = "0123456789abcdef"[v & 15];
        while ((v >>= 4) != 0);
        while (i > 0) putc(t[--i]);
    }
    void key(const char* k) {
        putc(' ');
        put(k);
        putc('=');
    }
};

uint64_t nowUs(clockid_t c) {
    struct timespec ts {};
    clock_gettime(c, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

bool disabled() {
    return __atomic_load_n(&g_disabled, __ATOMIC_ACQUIRE);
}
void disable() {
    __atomic_store_n(&g_disabled, true, __ATOMIC_RELEASE);
}

void writeAll(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            disable();
            return;
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
}

/// Reads a small /proc file into `buf` (NUL-terminated); its length, 0 when unreadable.
size_t readSmall(const char* path, char* buf, size_t cap) {
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = ::read(fd, buf, cap - 1);
    ::close(fd);
    size_t len = n > 0 ? static_cast<size_t>(n) : 0;
    buf[len] = '\0';
    return len;
}

/// This process's pid namespace inode and start (/proc/self/stat field 22, clock ticks after
/// boot): with the pid, the identity of the process, kept by an exec and written into its file's
/// name and every record. 0 each when unreadable.
struct Identity {
    uint64_t pidns = 0, ticks = 0;
};
Identity g_id;           // of this process (re-read in a forked child); guarded by g_open_mu
bool g_id_read = false;  // g_id was read for this process

Identity readIdentity() {
    Identity id;
    // The pid namespace ("pid:[4026531836]"): a job in a container records the pid of its own
    // namespace, which the host's /proc does not know by that number (docs/preload.md).
    char ns[64];
    ssize_t k = ::readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
    if (k > 6 && std::strncmp(ns, "pid:[", 5) == 0 && ns[k - 1] == ']') {
        uint64_t ino = 0;
        bool digits = true;
        for (ssize_t i = 5; i < k - 1; ++i) {
            digits = digits && ns[i] >= '0' && ns[i] <= '9';
            ino = ino * 10 + static_cast<uint64_t>(ns[i] - '0');
        }
        if (digits) id.pidns = ino;
    }
    char stat[1024];
    if (readSmall("/proc/self/stat", stat, sizeof stat) == 0) return id;
    const char* p = std::strrchr(stat, ')');  // the name may hold spaces and parentheses
    if (!p) return id;
    int field = 2;  // p is at the end of field 2 (comm)
    for (++p; *p && field < 22; ++p)
        if (*p == ' ') ++field;
    if (field != 22 || *p < '0' || *p > '9') return id;
    uint64_t ticks = 0;
    for (; *p >= '0' && *p <= '9'; ++p) ticks = ticks * 10 + static_cast<uint64_t>(*p - '0');
    id.ticks = ticks;
    return id;
}

/// This process's identity (read once per process; call with g_open_mu held or before threads).
Identity identity() {
    if (!g_id_read) {
        g_id = readIdentity();
        g_id_read = true;
    }
    return g_id;
}

/// ` pidns=N start_ticks=T`, each left out when unknown.
void putImage(Line& l, const Identity& id) {
    if (id.pidns != 0) {
        l.key("pidns");
        l.dec(id.pidns);
    }
    if (id.ticks != 0) {
        l.key("start_ticks");
        l.dec(id.ticks);
    }
}

/// This process's identity for telling a reused pid apart: the boot it runs in, its pid
/// namespace and its start. Each is left out when unreadable.
void putIdentity(Line& l) {
    char boot[64];
    size_t n = readSmall("/proc/sys/kernel/random/boot_id", boot, sizeof boot);
    while (n > 0 && (boot[n - 1] == '\n' || boot[n - 1] == ' ')) boot[--n] = '\0';
    bool ok = n > 0;
    for (size_t i = 0; i < n; ++i)
        ok = ok && ((boot[i] >= '0' && boot[i] <= '9') || (boot[i] >= 'a' && boot[i] <= 'f') ||
                    boot[i] == '-');
    if (ok) {
        l.key("boot");
        l.put(boot);
    }
    putImage(l, identity());
}

void writeStart(int fd) {
    Line l;
    l.put("gpufault.alloc 1 start");
    l.key("pid");
    l.dec(static_cast<uint64_t>(::getpid()));
    l.key("ppid");
    l.dec(static_cast<uint64_t>(::getppid()));
    l.key("wall_us");
    l.dec(nowUs(CLOCK_REALTIME));
    l.key("mono_us");
    l.dec(nowUs(CLOCK_MONOTONIC));
    putIdentity(l);
    char exe[1024];
    ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        for (ssize_t i = 0; i < n; ++i)
            if (exe[i] == '\n') exe[i] = '?';
        l.key("exe");  // last field: the rest of the line
        l.put(exe);
    }
    l.end();
    writeAll(fd, l.buf, l.n);
}

/// `DIR/gpufault-alloc.<pid>.<pidns>.<ticks>.log`: one file per process (an exec keeps the
/// name: its images share the file), so two processes of one pid number (containers with pid
/// namespaces of their own, a reused pid) never write one file. `gpufault-alloc.<pid>.log`
/// when the identity cannot be read.
void fileName(Line& p) {
    const char* dir = std::getenv("GPUFAULT_ALLOC_DIR");
    p.put(dir && *dir ? dir : ".");
    p.put("/gpufault-alloc.");
    p.dec(static_cast<uint64_t>(::getpid()));
    Identity id = identity();
    if (id.pidns != 0 && id.ticks != 0) {
        p.putc('.');
        p.dec(id.pidns);
        p.putc('.');
        p.dec(id.ticks);
    }
    p.put(".log");
    p.buf[p.n] = '\0';
}

/// The lowest descriptor number the record file is moved to: programs reuse low numbers first
/// (a program that closes every descriptor and opens a file gets 3), so ours stays out of their
/// way. Half the descriptor limit, at most 1000.
int highFd() {
    struct rlimit rl {};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 1000;
    rlim_t half = rl.rlim_cur / 2;
    return half > 1000 ? 1000 : half < 3 ? 3 : static_cast<int>(half);
}

/// True when `fd` is still the record file (same device and inode as when it was opened):
/// a program may have closed it and got its number back for a file or socket of its own.
bool stillOurs(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && st.st_dev == g_dev && st.st_ino == g_ino;
}

/// One line on stderr (async-signal-safe: write(2) only).
void say(const char* what) {
    Line l;
    l.put("gpufault-preload: ");
    l.put(what);
    l.put(g_path);
    l.put(": allocation recording stopped for this process");
    l.end();
    ssize_t w = ::write(2, l.buf, l.n);
    (void)w;
}

/// Opens `g_path` for appending (`create`: made when missing); -1 when missing, or not ours
/// alone. The descriptor is moved above highFd().
int openPath(bool create, struct stat& st) {
    // In a shared directory (gpufaultd's, mode 1733) another user may have put a file or a
    // link of that name there first: never follow a link, and never write into a file that is
    // not ours alone.
    int fd =
        ::open(g_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
    if (fd < 0) return -1;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
        st.st_nlink != 1) {
        ::close(fd);
        return -1;
    }
    int high = ::fcntl(fd, F_DUPFD_CLOEXEC, highFd());
    if (high >= 0) {
        ::close(fd);
        fd = high;
    }
    return fd;
}

/// Opens the record file (`create`: made when missing) and writes this image's `start`
/// record; -1 when missing, or not ours alone. Call with g_open_mu held.
int openLog(bool create) {
    Line p;
    fileName(p);
    std::memcpy(g_path, p.buf, p.n + 1 < sizeof g_path ? p.n + 1 : sizeof g_path);
    g_path[sizeof g_path - 1] = '\0';
    struct stat st {};
    int fd = openPath(create, st);
    if (fd < 0 && !create && errno == ENOENT) return -1;
    if (fd < 0) {
        disable();
    } else {
        g_dev = st.st_dev;
        g_ino = st.st_ino;
        writeStart(fd);
        __atomic_store_n(&g_fd, fd, __ATOMIC_RELEASE);
    }
    return fd;
}

/// The program closed our descriptor (its number may now be a file of its own: never written,
/// never closed): the record file is opened again by name, when it is still the same file.
/// Else recording stops, with one line on stderr. Call with g_open_mu held.
int reopenLog() {
    __atomic_store_n(&g_fd, -1, __ATOMIC_RELEASE);
    struct stat st {};
    int fd = openPath(false, st);
    if (fd >= 0 && (st.st_dev != g_dev || st.st_ino != g_ino)) {
        ::close(fd);
        fd = -1;
    }
    if (fd < 0) {
        disable();
        say("the program closed the record file's descriptor and the file is gone or replaced: ");
        return -1;
    }
    __atomic_store_n(&g_fd, fd, __ATOMIC_RELEASE);
    return fd;
}

/// The record file, opened (and its `start` record written) on the first event, and checked
/// before each record (stillOurs).
int logFd() {
    if (disabled()) return -1;
    int fd = __atomic_load_n(&g_fd, __ATOMIC_ACQUIRE);
    if (fd >= 0 && stillOurs(fd)) return fd;
    lockShim(&g_open_mu);
    fd = g_fd;
    if (!disabled()) {
        if (fd < 0)
            fd = openLog(true);
        else if (!stillOurs(fd))
            fd = reopenLog();
    } else {
        fd = -1;
    }
    unlockShim(&g_open_mu);
    return fd;
}

/// `gpufault.alloc 1 dropped count=N …` when calls were dropped since the last such record
/// (Scope): the recording is incomplete (a free not recorded leaves its block "live").
void writeDropped(int fd) {
    uint64_t n = takeDropped();
    if (n == 0) return;
    Line l;
    l.put("gpufault.alloc 1 dropped");
    l.key("count");
    l.dec(n);
    l.key("wall_us");
    l.dec(nowUs(CLOCK_REALTIME));
    l.key("mono_us");
    l.dec(nowUs(CLOCK_MONOTONIC));
    l.key("pid");
    l.dec(static_cast<uint64_t>(::getpid()));
    l.key("tid");
    l.dec(static_cast<uint64_t>(::syscall(SYS_gettid)));
    putImage(l, g_id);
    l.end();
    writeAll(fd, l.buf, l.n);
}

/// At exit: calls dropped since the last record are said.
__attribute__((destructor)) void fini() {
    if (!hasDropped()) return;
    int saved = errno;
    if (int fd = logFd(); fd >= 0) writeDropped(fd);
    errno = saved;
}

/// ` stack=module+0xoffset;…` (innermost first; `-` when no frame is known). Only whole frames
/// are written: when the next one would not fit in the record (long module names, many
/// frames), the stack ends there and ` stack_cut=N` says how many frames were left out.
void putStack(Line& l) {
    if (!g_backtrace || g_frames <= 0) return;
    void* ips[kMaxFrames + 8];
    int n = g_backtrace(ips, kMaxFrames + 8);
    int shown = 0, cut = 0;
    constexpr size_t kCutField = sizeof " stack_cut=16" - 1;  // kept free for the mark
    l.key("stack");
    for (int i = 0; i < n && shown + cut < g_frames; ++i) {
        Dl_info info{};
        if (dladdr(ips[i], &info) != 0 && info.dli_fbase == selfBase()) continue;  // our frames
        if (cut > 0) {
            ++cut;
            continue;
        }
        const char* mod = info.dli_fname && *info.dli_fname ? info.dli_fname : "?";
        const char* name = std::strrchr(mod, '/') ? std::strrchr(mod, '/') + 1 : mod;
        uintptr_t at = reinterpret_cast<uintptr_t>(ips[i]);
        uintptr_t off = info.dli_fbase ? at - reinterpret_cast<uintptr_t>(info.dli_fbase) : at;
        size_t digits = 1;
        for (uintptr_t v = off; v >= 16; v >>= 4) ++digits;
        size_t len = (shown > 0 ? 1 : 0) + std::strlen(name) + 3 + digits;  // [;]name+0x…
        if (len + kCutField > l.room()) {
            cut = 1;
            continue;
        }
        if (shown++ > 0) l.putc(';');
        // A blank, ';' or '=' would split the field; a control byte (a newline in a library's
        // file name) the record itself (hostile review 17, i4 LOW 5).
        for (const char* c = name; *c; ++c) {
            const auto u = static_cast<unsigned char>(*c);
            l.putc(*c == ' ' || *c == ';' || *c == '=' || u < 0x20 || u == 0x7f ? '_' : *c);
        }
        l.putc('+');
        l.hex(off);
    }
    if (shown == 0) l.putc('-');
    if (cut > 0) {
        l.key("stack_cut");
        l.dec(static_cast<uint64_t>(cut));
    }
}

/// libunwind, loaded RTLD_LOCAL so its _Unwind_* never join the global scope (Debian ships
/// only a non-PIC libunwind.a, so it cannot be linked into this library; docs/preload.md).
void loadUnwind() {
    void* h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h) {  // a copy beside this library (machines without libunwind8)
        Dl_info i{};
        if (dladdr(reinterpret_cast<void*>(&loadUnwind), &i) && i.dli_fname) {
            Line p;
            p.put(i.dli_fname);
            while (p.n > 0 && p.buf[p.n - 1] != '/') --p.n;
            p.put("libunwind.so.8");
            p.buf[p.n] = '\0';
            h = dlopen(p.buf, RTLD_NOW | RTLD_LOCAL);
        }
    }
    if (h) g_backtrace = reinterpret_cast<BacktraceFn>(realDlsym(h, "unw_backtrace"));
}

void atforkPrepare() {
    lockShim(&g_open_mu, &g_lookup_mu);  // holds our locks across fork
}
void atforkParent() {
    unlockShim(&g_open_mu, &g_lookup_mu);
}
/// The child writes its own file: the parent's descriptor is closed, reopened on first use.
void atforkChild() {
    if (g_fd >= 0 && stillOurs(g_fd)) ::close(g_fd);  // else the program's own by now
    g_fd = -1;
    g_id_read = false;  // another pid, another start
    takeDropped();      // the parent's, in the parent's file
    unlockShim(&g_open_mu, &g_lookup_mu);
}

__attribute__((constructor)) void init() {
    selfBase();
    if (const char* f = std::getenv("GPUFAULT_ALLOC_FRAMES"); f && *f) {
        int v = std::atoi(f);
        g_frames = v < 0 ? 0 : v > kMaxFrames ? kMaxFrames : v;
    }
    loadUnwind();
    pthread_atfork(atforkPrepare, atforkParent, atforkChild);
    // An image after an exec: its process recorded before (the file of its pid, namespace and
    // start exists), so its `start` record is written now, allocations or not: the old image's
    // buffers end here (docs/preload.md "Exec"). A process without a file gets one at its
    // first record, as before.
    lockShim(&g_open_mu);
    if (g_fd < 0 && !disabled()) openLog(false);
    unlockShim(&g_open_mu);
}

}  // namespace

/// Our load address (set by the constructor, or here when a hook runs before it did).
void* selfBase() {
    void* b = __atomic_load_n(&g_self_base, __ATOMIC_ACQUIRE);
    if (b) return b;
    Dl_info i{};
    if (dladdr(reinterpret_cast<void*>(&selfBase), &i)) b = i.dli_fbase;
    __atomic_store_n(&g_self_base, b, __ATOMIC_RELEASE);
    return b;
}

bool isOurs(const void* p) {
    Dl_info i{};
    return p && dladdr(p, &i) != 0 && i.dli_fbase == selfBase();
}

void emit(const Event& e) {
    int saved = errno;
    int fd = logFd();
    if (fd < 0) {
        errno = saved;
        return;
    }
    Line l;
    l.put("gpufault.alloc 1 ");
    l.put(e.kind);
    l.key("api");
    l.put(e.api);
    l.key("ptr");
    l.hex(e.ptr);
    l.key("size");
    l.dec(e.size);
    if (e.has_handle) {
        l.key("handle");
        l.hex(e.handle);
    }
    if (e.mem) {
        l.key("mem");
        l.put(e.mem);
    }
    l.key("device");
    l.sdec(e.device);
    l.key("rc");
    l.sdec(e.rc);
    l.key("wall_us");
    l.dec(nowUs(CLOCK_REALTIME));
    l.key("mono_us");
    l.dec(nowUs(CLOCK_MONOTONIC));
    l.key("pid");
    l.dec(static_cast<uint64_t>(::getpid()));
    l.key("tid");
    l.dec(static_cast<uint64_t>(::syscall(SYS_gettid)));
    putImage(l, g_id);  // read when the file was opened: the record names its process
    if (Scope::nested())
        l.put(" nested=1 stack=-");  // no stack walk inside a signal handler (Scope)
    else
        putStack(l);
    l.end();
    writeAll(fd, l.buf, l.n);
    writeDropped(fd);
    errno = saved;
}

}  // namespace gpufault::preload
