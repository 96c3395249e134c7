#include <fcntl.h>
#include <fmt/format.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/output.h"
#include "collectors/coredump/core_reader.h"
#include "ingest/ingest.h"
#include "ingest/ingest_alloc.h"
#include "ingest/ingest_core.h"
#include "ingest/ingest_crash.h"
#include "schema/store.h"

namespace gpufault::cli {

namespace {

/// The signal (SIGINT, SIGTERM) that asked an ingest to stop; 0 while none did.
volatile std::sig_atomic_t gStopSignal = 0;
/// An eventfd the handler writes: a read waiting on a quiet pipe ends (IngestOptions::stop_fd).
int gStopFd = -1;

/// The first SIGINT or SIGTERM stops the ingest at its next batch, which is committed with
/// its checkpoint (IngestOptions::stop); the second one ends the process at once.
void onStopSignal(int sig) {
    if (gStopSignal != 0) {
        ::signal(sig, SIG_DFL);
        ::raise(sig);
        return;
    }
    gStopSignal = sig;
    if (gStopFd >= 0) {
        const uint64_t one = 1;
        (void)!::write(gStopFd, &one, sizeof one);
    }
    static constexpr char kSaid[] =
        "\ngpufault: interrupted: storing what was read (again to quit at once)\n";
    (void)!::write(STDERR_FILENO, kSaid, sizeof kSaid - 1);
}

/// onStopSignal for SIGINT and SIGTERM while alive (SA_RESTART: the reading thread's read()
/// goes on); the earlier actions come back after.
class StopSignals {
  public:
    StopSignals() {
        gStopSignal = 0;
        gStopFd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        struct sigaction sa {};
        sa.sa_handler = onStopSignal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGINT, &sa, &int_);
        ::sigaction(SIGTERM, &sa, &term_);
    }
    ~StopSignals() {
        ::sigaction(SIGINT, &int_, nullptr);
        ::sigaction(SIGTERM, &term_, nullptr);
        if (gStopFd >= 0) ::close(gStopFd);
        gStopFd = -1;
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

  private:
    struct sigaction int_ {
    }, term_{};
};

/// Every input must be readable before the store is touched.
bool checkInputs(const std::vector<std::string>& files) {
    bool ok = true;
    for (const auto& f : files) {
        if (f == "-") continue;
        struct stat st {};
        if (::stat(f.c_str(), &st) != 0) {
            printText(stderr, "gpufault: {}: {}\n", f, std::strerror(errno));
            ok = false;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {  // `ingest logs/*` over a subdirectory: skipped, exit 2
            printText(stderr, "gpufault: {}: is a directory: skipped\n", f);
            continue;
        }
        // A FIFO or device is checked without opening it: an open would block or consume data.
        if (!S_ISREG(st.st_mode)) {
            if (::access(f.c_str(), R_OK) != 0) {
                printText(stderr, "gpufault: {}: {}\n", f, std::strerror(errno));
                ok = false;
            }
            continue;
        }
        int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            printText(stderr, "gpufault: {}: {}\n", f, std::strerror(errno));
            ok = false;
            continue;
        }
        ::close(fd);
    }
    return ok;
}

void progressBar(uint64_t done, uint64_t total) {
    if (total == 0) return;
    int pct = static_cast<int>(done * 100 / total);
    int bars = pct / 4;
    // fmt::print: its '\r' redraws the bar (printText would escape it), and nothing in it
    // comes from the input.
    fmt::print(stderr,
               "\r[{:<25}] {:3}% {:.0f}/{:.0f} MiB",
               std::string(static_cast<size_t>(bars), '#'),
               pct,
               static_cast<double>(done) / (1 << 20),
               static_cast<double>(total) / (1 << 20));
    if (done >= total) fmt::print(stderr, "\n");
}

/// Why `f` is an ELF file that `ingest` cannot take (coredump::notACore of its first bytes);
/// nullopt for anything else. Regular files only, opened non-blocking (openRegular).
std::optional<std::string> elfNotACore(const std::string& f) {
    auto fd = coredump::openRegular(f);
    if (!fd) return std::nullopt;
    char h[64];
    ssize_t n = ::pread(*fd, h, sizeof h, 0);
    ::close(*fd);
    if (n <= 0) return std::nullopt;
    auto why = coredump::notACore(std::string_view(h, static_cast<size_t>(n)));
    if (why)
        *why += ": give its core (and this file as --exe), or `gpufault codeobj` for GPU code "
                "objects";
    return why;
}

/// Prints one stored core's summary line.
void printCore(const std::string& f, const CoreIngestSummary& r) {
    for (const auto& w : r.warnings) printText(stderr, "gpufault: warning: {}: {}\n", f, w);
    if (r.unchanged) {
        if (r.same_as)
            printText(stdout, "{}: core already stored as {}\n", f, *r.same_as);
        else
            printText(stdout, "{}: core already ingested, unchanged\n", f);
        return;
    }
    if (r.kind != "cpu") {
        printText(stdout,
                  "{}: {} core {} (metadata only, not unwound){}, {:.2f} s\n",
                  f,
                  r.kind,
                  r.core_id,
                  r.operands ? fmt::format(", {} pointer arguments", r.operands) : "",
                  r.seconds);
        return;
    }
    printText(stdout,
              "{}: core {}, {} thread{}, {} frames in the crashing thread, top {}, stack {}, "
              "{:.2f} s\n",
              f,
              r.core_id,
              r.threads,
              r.threads == 1 ? "" : "s",
              r.frames,
              r.top.empty() ? "-" : printable(r.top),  // a symbol may hold a newline too
              r.signature.empty() ? "-" : r.signature,
              r.seconds);
    if (r.partial) printText(stdout, "{}: the stack is partial: {}\n", f, *r.partial);
}

/// Reads one core; prints its summary unless quiet. False on error (printed).
bool ingestOneCore(Store& store, const std::string& f, const CoreOptions& o, bool quiet) {
    coredump::ReadOptions ro;
    ro.unwind.exe = o.exe;
    ro.unwind.debuginfo_path = o.debuginfo_path;
    ro.limits.seconds = static_cast<double>(o.unwind_seconds);
    auto r = ingestCore(store, f, ro);
    if (!r) {
        printText(stderr, "gpufault: {}\n", r.error().message);
        return false;
    }
    if (!quiet) printCore(f, *r);
    return true;
}

/// systemd-coredump files and journal entries, apport reports. 0 not one of them, 1 done,
/// -1 error (printed).
int ingestCrashInput(Store& store, const std::string& f, const CoreOptions& o, bool quiet) {
    auto kind = crashInputOf(f);
    if (kind == CrashInput::None) return 0;
    CrashOptions co;
    co.read.unwind.exe = o.exe;
    co.read.unwind.debuginfo_path = o.debuginfo_path;
    co.read.limits.seconds = static_cast<double>(o.unwind_seconds);
    co.unpack.max_bytes = o.max_unpacked_mib << 20;
    if (kind == CrashInput::JournalExport || kind == CrashInput::JournalJson) {
        auto r = ingestJournalCores(store, f, kind, co);
        if (!r) {
            printText(stderr, "gpufault: {}\n", r.error().message);
            return -1;
        }
        if (!quiet) {
            printText(stdout,
                      "{}: {} journal entries, {} systemd-coredump\n",
                      f,
                      r->entries,
                      r->cores.size());
            for (const auto& c : r->cores) printCore(f, c);
        }
        for (const auto& w : r->warnings) printText(stderr, "gpufault: warning: {}\n", w);
        // JSON lines are also log lines: the text ingest reads their MESSAGE fields next.
        return kind == CrashInput::JournalJson ? 0 : 1;
    }
    auto r = kind == CrashInput::Apport ? ingestApportReport(store, f, co, true)
                                        : ingestSystemdCoreFile(store, f, co, true);
    if (!r) {
        printText(stderr, "gpufault: {}\n", r.error().message);
        return -1;
    }
    if (!quiet) printCore(f, *r);
    return 1;
}

/// What crashTextLike() found in the lines it read.
struct CrashTextSigns {
    bool stack = false;   ///< `Stack trace of thread `
    bool gdb = false;     ///< a line `#…` (leading blanks aside) holding ` 0x` and ` in `
    bool dumped = false;  ///< ` dumped core.`
};

/// Notes the signs in `r`, whole lines from a line's start: memmem over all of them, not a
/// search per line (none of the texts holds a newline).
void scanCrashText(std::string_view r, CrashTextSigns& s) {
    const char* b = r.data();
    const char* e = b + r.size();
    constexpr std::string_view kStack = "Stack trace of thread ", kDumped = " dumped core.";
    if (!s.stack && ::memmem(b, r.size(), kStack.data(), kStack.size())) s.stack = true;
    if (!s.dumped && ::memmem(b, r.size(), kDumped.data(), kDumped.size())) s.dumped = true;
    for (const char* h = b; !s.gdb && h < e;) {
        h = static_cast<const char*>(std::memchr(h, '#', static_cast<size_t>(e - h)));
        if (!h) break;
        const char* q = h;
        while (q > b && (q[-1] == ' ' || q[-1] == '\t')) --q;
        const void* nl = std::memchr(h, '\n', static_cast<size_t>(e - h));
        const char* le = nl ? static_cast<const char*>(nl) : e;
        if (q == b || q[-1] == '\n') {
            const std::string_view l(h, static_cast<size_t>(le - h));
            s.gdb =
                l.find(" 0x") != std::string_view::npos && l.find(" in ") != std::string_view::npos;
        }
        h = le;
    }
}

/// What pasted crash text a file with no evidence looks like ("" when none): `coredumpctl
/// info` or systemd-coredump's journal message (`Stack trace of thread N:`), gdb's backtrace
/// (`coredumpctl gdb`: `#0  0x… in f ()`), `journalctl`'s `… dumped core.` line. Reads the
/// first kLines lines.
std::string crashTextLike(const std::string& path) {
    constexpr int kLines = 20000;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    CrashTextSigns s;
    std::vector<char> buf(size_t{1} << 16);  // read into; doubled for a longer line
    size_t have = 0;                         // bytes in `buf` from a line's start, not scanned
    int lines = 0;
    for (bool eof = false; lines < kLines && !eof && !s.stack;) {
        if (have == buf.size()) buf.resize(buf.size() * 2);
        const ssize_t got = ::read(fd, buf.data() + have, buf.size() - have);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            eof = true;
        else
            have += static_cast<size_t>(got);
        // Whole lines, at most the ones still to read (at the end, the last one too).
        size_t end = 0;
        while (lines < kLines) {
            const void* nl = std::memchr(buf.data() + end, '\n', have - end);
            if (!nl) {
                if (eof && end < have) {
                    end = have;
                    ++lines;
                }
                break;
            }
            end = static_cast<size_t>(static_cast<const char*>(nl) - buf.data()) + 1;
            ++lines;
        }
        scanCrashText(std::string_view(buf.data(), end), s);
        std::memmove(buf.data(), buf.data() + end, have - end);
        have -= end;
    }
    ::close(fd);
    if (s.stack)
        return "`coredumpctl info` output or systemd-coredump's message as `journalctl` prints it";
    if (s.gdb) return "a gdb backtrace (`coredumpctl gdb`, `bt`)";
    if (s.dumped) return "`journalctl` text of a crash (`… dumped core.`)";
    return "";
}

/// Says what to give ingest instead when a file that yielded no evidence looks like pasted
/// crash text (stdin is not read again).
void printNoEvidenceHint(const std::string& path) {
    if (path == "-") return;
    auto what = crashTextLike(path);
    if (what.empty()) return;
    printText(stderr,
              "gpufault: {}: this looks like {}; gpufault does not read that text. Give it the "
              "crash itself: the core (`coredumpctl dump PID -o core.PID`, or the file under "
              "/var/lib/systemd/coredump), or the journal entry in export format (`journalctl "
              "-o export COREDUMP_PID=PID > crash.export`), then `gpufault ingest FILE`\n",
              path,
              what);
}

}  // namespace

bool ingestOneAllocLog(Store& store, const std::string& f, std::optional<int64_t> run, bool quiet) {
    auto r = ingestAllocLog(store, f, run);
    if (!r) {
        printText(stderr, "gpufault: {}\n", r.error().message);
        return false;
    }
    for (const auto& w : r->warning_texts) printText(stderr, "gpufault: {}\n", w);
    if (quiet) return true;
    if (r->unchanged) {
        printText(stdout, "{}: allocation records already ingested, unchanged\n", f);
        return true;
    }
    std::string pids;
    for (auto p : r->pids) pids += (pids.empty() ? "" : ",") + std::to_string(p);
    // Records the recording already held (another copy, an earlier generation) and records
    // after the stored end of their process are said only when there are any.
    std::string extra;
    if (r->duplicates > 0)
        extra +=
            fmt::format(", {} already stored through another file or generation of the recording",
                        r->duplicates);
    if (r->after_end > 0)
        extra += fmt::format(", {} after the end of their process (not stored)", r->after_end);
    // A file that grew since it was ingested: what this read added.
    std::string lines = counted(static_cast<int64_t>(r->lines), "line");
    if (r->lines_before > 0 && !r->new_generation)
        lines = fmt::format("{} after the {} ingested before", lines, r->lines_before);
    printText(stdout,
              "{}: allocation records of pid {}: {}, {} ({} freed{}), {}, {}, {:.2f} s\n",
              f,
              pids.empty()            ? "-"
              : r->pids_without_start ? pids + " (no start record stored)"
                                      : pids,
              lines,
              counted(static_cast<int64_t>(r->allocations - r->allocations_before), "allocation"),
              r->freed,
              extra,
              counted(static_cast<int64_t>(r->failed), "failed call"),
              counted(static_cast<int64_t>(r->warnings), "warning"),
              r->seconds);
    return true;
}

int cmdIngest(const Global& g,
              const std::vector<std::string>& files,
              int window,
              bool quiet,
              const CoreOptions& cores) {
    if (!checkInputs(files)) return 2;
    // Only directories (named by checkInputs): nothing to read, so no store is created or
    // touched (hostile review 154, LOW 1).
    if (std::all_of(files.begin(), files.end(), [](const std::string& f) {
            struct stat ds {};
            return f != "-" && ::stat(f.c_str(), &ds) == 0 && S_ISDIR(ds.st_mode);
        }))
        return 2;
    if (cores.exe) {  // named by the user: a missing or unreadable one is a usage error
        struct stat st {};
        if (::stat(cores.exe->c_str(), &st) != 0 || ::access(cores.exe->c_str(), R_OK) != 0) {
            printText(stderr, "gpufault: --exe {}: {}\n", *cores.exe, std::strerror(errno));
            return 2;
        }
        if (!S_ISREG(st.st_mode)) {
            printText(stderr, "gpufault: --exe {}: not a regular file\n", *cores.exe);
            return 2;
        }
    }
    std::error_code ec;
    auto dir = std::filesystem::path(g.db).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    auto store = Store::open(g.db, Store::Mode::ReadWrite);
    if (!store) {
        printText(stderr, "gpufault: {}\n", store.error().message);
        printText(
            stderr, "gpufault: cannot write the store {}; choose another with --db PATH\n", g.db);
        return 2;
    }
    IngestOptions opt;
    opt.dispatch_window = window;
    // Ctrl-C stores what was read — except with a named FIFO among the inputs, whose open()
    // waits for a writer where no stop can reach it: Ctrl-C ends the process at once then, as
    // it always did (hostile review 158, N1).
    const bool fifo = std::any_of(files.begin(), files.end(), [](const std::string& f) {
        struct stat fs {};
        return f != "-" && ::stat(f.c_str(), &fs) == 0 && S_ISFIFO(fs.st_mode);
    });
    std::optional<StopSignals> signals;
    if (!fifo) {
        signals.emplace();
        opt.stop = [] { return gStopSignal != 0; };
        opt.stop_fd = gStopFd;
    }
    bool tty = ::isatty(STDERR_FILENO);
    int rc = 0;
    // A file that cannot be read as what it is (a cut core, an lz4 core, a malformed report)
    // is named and skipped, as cp and gzip do: `ingest /var/lib/systemd/coredump/*` stores
    // every other core, and exits 2 (hostile review 17, i4 H2).
    for (const auto& f : files) {
        if (gStopSignal != 0) {
            printText(stderr, "gpufault: {}: not read (interrupted)\n", f);
            continue;
        }
        if (struct stat ds {}; f != "-" && ::stat(f.c_str(), &ds) == 0 && S_ISDIR(ds.st_mode)) {
            rc = 2;  // named by checkInputs
            continue;
        }
        if (f != "-" && isAllocLogFile(f)) {
            if (!ingestOneAllocLog(*store, f, std::nullopt, quiet)) {
                rc = 2;  // the rest are read: one bad file costs none of them
                continue;
            }
            continue;
        }
        if (f != "-" && coredump::isCoreFile(f)) {
            if (!ingestOneCore(*store, f, cores, quiet)) {
                rc = 2;  // the rest are read: one bad file costs none of them
                continue;
            }
            continue;
        }
        if (f != "-") {
            if (auto why = elfNotACore(f)) {
                printText(stderr, "gpufault: {}: {}\n", f, *why);
                rc = 2;  // the rest are read: one bad file costs none of them
                continue;
            }
            int c = ingestCrashInput(*store, f, cores, quiet);
            if (c < 0) {
                rc = 2;  // the rest are read: one bad file costs none of them
                continue;
            }
            if (c > 0) continue;
        }
        struct stat st {};
        bool big = f != "-" && ::stat(f.c_str(), &st) == 0 && st.st_size > (64 << 20);
        opt.progress =
            (tty && big && !quiet) ? progressBar : std::function<void(uint64_t, uint64_t)>();
        auto r = ingestFile(*store, f, opt);
        if (!r) {
            printText(stderr, "gpufault: {}\n", r.error().message);
            rc = 2;
            continue;
        }
        if (r->interrupted)
            printText(stderr,
                      "gpufault: {}: interrupted after {}; {}\n",
                      r->name,
                      counted(static_cast<int64_t>(r->lines), "line"),
                      f == "-" ? "the lines read are stored (a stream is not read again)"
                               : "stored up to its checkpoint: the same `gpufault ingest` goes "
                                 "on from there");
        if (quiet) continue;
        if (r->unchanged) {
            printText(stdout, "{}: already ingested, unchanged\n", f);
            continue;
        }
        if (r->replaced_source != 0)
            printText(
                stdout,
                "{}: written again since it was ingested (the {} read then are not its first bytes "
                "now): a new source, read from its start; the earlier content's records are "
                "kept\n",
                f,
                counted(static_cast<int64_t>(r->replaced_bytes), "byte"));
        uint64_t n = 0;
        std::string kinds;
        for (auto& [k, c] : r->evidence) {
            n += c;
            kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", c, k);
        }
        std::string repeated =
            r->repeated ? fmt::format(" ({} already stored from its earlier content)",
                                      counted(static_cast<int64_t>(r->repeated), "kernel record"))
                        : "";
        printText(stdout,
                  "{}: {}{}, {} evidence{}{}{}, {} ({} kept), {}, {}, {:.2f} s\n",
                  r->name,
                  counted(static_cast<int64_t>(r->lines), "line"),
                  r->resumed ? " (resumed)" : "",
                  n,
                  kinds.empty() ? "" : " (",
                  kinds.empty() ? "" : kinds + ")",
                  repeated,
                  counted(static_cast<int64_t>(r->dispatches), "dispatch", "dispatches"),
                  r->dispatch_rows,
                  counted(static_cast<int64_t>(r->operands), "operand"),
                  counted(static_cast<int64_t>(r->warnings), "warning"),
                  r->seconds);
        if (n == 0 && r->repeated == 0) printNoEvidenceHint(f);
    }
    // Also after an interrupt: the records stored so far get their incidents (a second
    // signal ends the process at once).
    auto inc = recorrelate(*store);
    if (!inc) {
        printText(stderr, "gpufault: correlation: {}\n", inc.error().message);
        return 2;
    }
    if (!quiet)
        printText(stdout, "{} in {}\n", counted(static_cast<int64_t>(*inc), "incident"), g.db);
    if (gStopSignal != 0) return 128 + gStopSignal;  // as the shell reports a signal
    if (int d = runDiagnoses(store->db(), cores.sysfs_root, cores.proc_root, quiet); d != 0)
        return d;
    return rc;
}

}  // namespace gpufault::cli
