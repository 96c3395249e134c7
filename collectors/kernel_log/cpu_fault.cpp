// CPU user-space fault lines of the Linux kernel (FORMATS.md §9.0–9.1). One line = one record.
//
//   x86 arch/x86/mm/fault.c show_signal_msg():
//     %s[%d]: segfault at %lx ip %px sp %px error %lx[ in MAP][ likely on CPU %d (core %d, socket
//     %d)] (before 2.6.25: `rip %lx rsp %lx`; `likely on CPU` since 6.1)
//   x86 arch/x86/kernel/traps.c show_signal(), pr_fmt `traps: `:
//     traps: %s[%d] %s%s ip:%lx sp:%lx error:%lx[ in MAP]   (type "trap " + name, or "" + GP text)
//     older: %s[%d] trap %s ip:… / %s[%d] general protection ip:…   (no `traps: ` for #GP)
//   arm64 arch/arm64/kernel/traps.c arm64_show_signal():
//     %s[%d]: unhandled exception: [%s, ESR 0x%lx, ]%s[ in MAP]
//   MAP, mm/memory.c print_vma_addr(): 2.6.25–6.9 `lib[START+SIZE]`, 6.10+
//   `lib[FILEOFF,START+SIZE]`. printk_ratelimit(): `<caller>: N callbacks suppressed` → attr on the
//   next record.
#include "collectors/kernel_log/cpu_fault.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <string>

#include "collectors/common/text.h"

namespace gpufault {

namespace {

using std::string_view;
constexpr size_t npos = string_view::npos;
/// Lines after a `callbacks suppressed` line within which the next record takes its count (the
/// ratelimit prints it right before the message it lets through).
constexpr uint64_t kSuppressedWindow = 8;

bool isDigit(char c) {
    return c >= '0' && c <= '9';
}

/// Position of the `[` of a `[digits]` group that ends right before `close` (the `]`), or npos.
size_t pidBracket(string_view s, size_t close) {
    size_t i = close;
    while (i > 0 && isDigit(s[i - 1])) --i;
    if (i == close || i == 0 || s[i - 1] != '[') return npos;
    return i - 1;
}

/// The last `[digits]` + `tail` in `s`: returns the `[` position (npos if none).
size_t findPidGroup(string_view s, string_view tail) {
    for (size_t p = s.rfind(tail); p != npos; p = p ? s.rfind(tail, p - 1) : npos) {
        if (size_t b = pidBracket(s, p); b != npos) return b;
    }
    return npos;
}

/// comm = text before the `[pid]`. A decoded kernel line (origin Kernel) starts with it; otherwise
/// a dmesg/syslog prefix may still precede it, cut after its last `] ` or `: `.
string_view commOf(const LogLine& line, size_t bracket) {
    string_view c = line.text.substr(0, bracket);
    if (line.origin == Origin::Kernel) return c;
    size_t a = c.rfind("] "), b = c.rfind(": ");
    size_t cut = a == npos ? b : (b == npos ? a : std::max(a, b));
    return cut == npos ? c : c.substr(cut + 2);
}

/// Hex at the front of `*s`, consumed; complete only when followed by `delim` (a field cut at the
/// end of the line is not trusted, unless `eol_ok`).
std::optional<uint64_t> hexField(string_view* s, char delim, bool eol_ok = false) {
    size_t n = 0;
    auto v = text::parseHex(*s, &n);
    if (!v || text::startsWith(*s, "0x") || text::startsWith(*s, "0X")) return std::nullopt;
    bool ok = n < s->size() ? (*s)[n] == delim : eol_ok;
    s->remove_prefix(n);
    return ok ? v : std::nullopt;
}

std::optional<std::string> vendorOf(string_view module) {
    if (text::startsWith(module, "libamdhip64") || text::startsWith(module, "libhsa")) return "amd";
    if (text::startsWith(module, "libcuda") || text::startsWith(module, "libnvidia"))
        return "nvidia";
    return std::nullopt;
}

/// START and SIZE of a mapping as parseMapping() read them.
struct MapRange {
    std::optional<uint64_t> start, size;
    /// True when both were read and [START, START+SIZE) holds `ip`.
    bool holds(uint64_t ip) const { return start && size && ip >= *start && ip - *start < *size; }
};

/// `NAME[START+SIZE]` or `NAME[FILEOFF,START+SIZE]` (possibly cut): module, module_offset
/// (FILEOFF; or ip − START for the old form), attrs map_start/map_size. Returns the range read.
MapRange parseMapping(string_view s, std::optional<uint64_t> ip, Evidence& e) {
    size_t lb = s.rfind('[');
    if (lb == npos || lb == 0) return {};  // cut before the brackets: the name may be cut too
    string_view module = s.substr(0, lb);
    e.module = std::string(module);
    e.vendor = vendorOf(module);
    string_view in = s.substr(lb + 1);
    size_t n = 0;
    auto first = text::parseHex(in, &n);
    if (!first || n >= in.size()) return {};
    std::optional<uint64_t> start, size;
    if (in[n] == ',') {  // 6.10+: FILEOFF,START+SIZE
        e.module_offset = *first;
        in.remove_prefix(n + 1);
        start = hexField(&in, '+');
    } else if (in[n] == '+') {
        start = *first;
        in.remove_prefix(n);
    }
    if (!start) return {};
    e.setAttr("map_start", text::hexAddr(*start));
    if (!in.empty()) in.remove_prefix(1);
    size = hexField(&in, ']');
    if (size) e.setAttr("map_size", text::hexAddr(*size));
    bool inside = ip && *ip >= *start && (!size || *ip - *start < *size);
    if (!e.module_offset && inside) e.module_offset = *ip - *start;
    return {start, size};
}

/// Cuts ` likely on CPU %d (core %d, socket %d)` off `*s` into attrs cpu/core/socket.
void takeLikelyCpu(string_view* s, Evidence& e) {
    size_t p = s->find(" likely on CPU ");
    if (p == npos) return;
    string_view t = s->substr(p + 15);
    *s = s->substr(0, p);
    if (auto cpu = text::parseDec(t)) e.setAttr("cpu", std::to_string(*cpu));
    if (auto c = text::after(t, "(core ", ",)")) e.setAttr("core", std::string(*c));
    if (auto k = text::after(t, "socket ", ")")) e.setAttr("socket", std::string(*k));
}

/// After `segfault at `: `ADDR (r)ip IP (r)sp SP error E[ in MAP]`. Returns why a whole ADDR
/// field was not taken (not hex, or past 64 bits), "" otherwise; the fields after it are read.
std::string parseSegfault(string_view s, Evidence& e) {
    takeLikelyCpu(&s, e);
    std::string refused;
    const string_view from = s;
    const size_t space = from.find(' ');
    auto addr = hexField(&s, ' ');
    if (!addr) {
        if (space == npos) return refused;  // cut in the address: nothing more to read
        refused = fmt::format("segfault: the address {} is not a 64-bit hex value: stored "
                              "without an address",
                              from.substr(0, std::min<size_t>(space, 64)));
        s = from.substr(space);
    } else {
        e.address = *addr;
        e.address_exact = true;
    }
    std::optional<uint64_t> ip;
    if (text::startsWith(s, " ip ") || text::startsWith(s, " rip ")) {
        s.remove_prefix(s.find(' ', 1) + 1);
        if ((ip = hexField(&s, ' '))) e.setAttr("ip", text::hexAddr(*ip));
    }
    if (text::startsWith(s, " sp ") || text::startsWith(s, " rsp ")) {
        s.remove_prefix(s.find(' ', 1) + 1);
        if (auto sp = hexField(&s, ' ')) e.setAttr("sp", text::hexAddr(*sp));
    }
    if (!text::startsWith(s, " error ")) return refused;
    s.remove_prefix(7);
    if (auto err = hexField(&s, ' ', true)) e.setAttr("error", text::hexAddr(*err));
    if (text::startsWith(s, " in ")) parseMapping(s.substr(4), ip, e);
    return refused;
}

/// After the trap description: `ip:IP sp:SP error:E[ in MAP]`.
void parseTrapRegs(string_view s, Evidence& e) {
    std::optional<uint64_t> ip;
    if (text::startsWith(s, "ip:")) {
        s.remove_prefix(3);
        if ((ip = hexField(&s, ' '))) e.setAttr("ip", text::hexAddr(*ip));
    }
    if (text::startsWith(s, " sp:")) {
        s.remove_prefix(4);
        if (auto sp = hexField(&s, ' ')) e.setAttr("sp", text::hexAddr(*sp));
    }
    if (!text::startsWith(s, " error:")) return;
    s.remove_prefix(7);
    if (auto err = hexField(&s, ' ', true)) e.setAttr("error", text::hexAddr(*err));
    if (text::startsWith(s, " in ")) parseMapping(s.substr(4), ip, e);
}

/// arm64 after `unhandled exception: `: `[CLASS, ESR 0x%lx, ]DESC[ in MAP]` (no data address).
void parseArm64(string_view s, Evidence& e) {
    if (size_t p = s.find(", ESR 0x"); p != npos) {
        e.setAttr("esr_class", std::string(s.substr(0, p)));
        s.remove_prefix(p + 6);
        size_t n = 0;
        if (auto esr = text::parseHex(s, &n)) e.setAttr("esr", text::hexAddr(*esr));
        s.remove_prefix(n);
        if (text::startsWith(s, ", ")) s.remove_prefix(2);
    }
    size_t in = s.rfind(" in ");
    if (in != npos && s.find('[', in) != npos) {
        parseMapping(s.substr(in + 4), std::nullopt, e);
        s = s.substr(0, in);
    }
    if (!s.empty()) e.setAttr("fault", std::string(s));
}

/// `<func>: N callbacks suppressed` of the printk_ratelimit() callers above, else nullopt.
std::optional<int64_t> suppressedCount(string_view t) {
    size_t p = t.find(" callbacks suppressed");
    if (p == npos) return std::nullopt;
    size_t i = p;
    while (i > 0 && isDigit(t[i - 1])) --i;
    if (i == p || i < 2 || t.substr(i - 2, 2) != ": ") return std::nullopt;
    string_view head = t.substr(0, i - 2);
    constexpr std::array<string_view, 3> kFuncs{
        "show_signal_msg", "show_signal", "arm64_show_signal"};
    for (string_view f : kFuncs) {
        if (text::endsWith(head, f) &&
            (head.size() == f.size() || head[head.size() - f.size() - 1] == ' '))
            return text::parseDec(t.substr(i));
    }
    return std::nullopt;
}

class CpuFaultMatcher final : public Matcher {
  public:
    void feed(const LogLine& line, Sink& out) override {
        if (held_ && continueHeld(line, out)) return;
        if (suppressed_ && line.line > suppressed_line_ + kSuppressedWindow) suppressed_.reset();
        string_view t = line.text;
        // Cheap prefilter: every anchor below contains ':' (most log lines of other producers
        // that do are rejected by the finds; the Evidence is only built for a match).
        if (t.find(':') == npos) return;
        // Which record the line is, before any Evidence is built (most lines are none).
        const bool segfault = t.find("]: segfault at ") != npos;
        const size_t ip = segfault ? npos : t.find(" ip:");
        if (!segfault && ip == npos && t.find("]: unhandled exception: ") == npos) {
            if (auto n = suppressedCount(t)) {
                suppressed_ = *n;
                suppressed_line_ = line.line;
            }
            return;
        }
        Evidence e;
        size_t b = npos;
        if (segfault) {
            if ((b = findPidGroup(t, "]: segfault at ")) == npos) return;
            size_t close = t.find(']', b);
            if (auto refused = parseSegfault(t.substr(close + 15), e); !refused.empty())
                out.warning({line.line, std::move(refused)});
        } else if (ip != npos) {
            if ((b = trapBracket(t, ip)) == npos) return;
            size_t close = t.find(']', b);
            e.setAttr("trap", std::string(trapName(t.substr(close + 2, ip - close - 2))));
            parseTrapRegs(t.substr(ip + 1), e);
        } else {
            if ((b = findPidGroup(t, "]: unhandled exception: ")) == npos) return;
            parseArm64(t.substr(t.find(']', b) + 24), e);
        }
        emit(line, b, std::move(e), out);
    }

    void finish(Sink& out) override { releaseHeld(out); }
    bool kernelLogOnly() const override { return true; }
    /// The suppressed count expires by line number: skipped lines change nothing; a record
    /// held for its ` in MAP` fragment waits for the next line.
    bool idle() const override { return !held_; }
    /// A pending `callbacks suppressed` count is state too: resume at its line to keep it.
    std::optional<uint64_t> openSince() const override {
        if (held_) return held_->line;  // before any suppressed count it took
        return suppressed_ ? std::optional<uint64_t>(suppressed_line_) : std::nullopt;
    }

  private:
    /// A record whose line ended at its `error` field: the kernel prints ` in MAP` and
    /// ` likely on CPU …` with KERN_CONT (FORMATS.md §9.1), which a busy console or `dmesg`
    /// shows as the next line(s) (kmsg flag `c`).
    std::optional<Evidence> held_;

    void releaseHeld(Sink& out) {
        if (held_) out.evidence(std::move(*held_));
        held_.reset();
    }

    /// Takes `line` into the held record when it is its continuation (` in MAP`, ` likely on
    /// CPU …`); true then. Otherwise emits the held record (false: `line` is matched as usual).
    bool continueHeld(const LogLine& line, Sink& out) {
        string_view t = text::trim(line.text);
        Evidence& e = *held_;
        bool in = text::startsWith(t, "in ") && t.find('[') != npos;
        bool cpu = text::startsWith(t, "likely on CPU ");
        if (!in && !cpu) {
            releaseHeld(out);
            return false;
        }
        std::string spaced = " " + std::string(t);  // takeLikelyCpu() wants its leading blank
        string_view sv = spaced;
        Evidence more;
        takeLikelyCpu(&sv, more);
        if (in) {
            // START+SIZE is the VMA that contains ip (FORMATS.md §9.1): a fragment whose mapping
            // does not hold the record's ip is another task's (two faults printed at once) or
            // says the ip is in no module (`ip 0`)
            std::optional<uint64_t> ip;
            if (auto a = e.attr("ip")) ip = text::parseHex(*a);
            MapRange range = parseMapping(text::trim(sv).substr(3), ip, more);
            if (ip && !range.holds(*ip)) {
                releaseHeld(out);
                return false;
            }
        }
        if (more.module) {
            e.module = more.module;
            e.module_offset = more.module_offset;
            e.vendor = more.vendor;
        }
        for (auto& [k, v] : more.attrs) e.setAttr(k, v);
        appendRawLine(e.raw, line.raw.empty() ? line.text : line.raw);
        // ` likely on CPU` is the last fragment the kernel prints; after ` in MAP` it may follow
        if (cpu || e.attr("cpu")) releaseHeld(out);
        return true;
    }

    /// From a `callbacks suppressed` line, for the next record.
    std::optional<int64_t> suppressed_;
    uint64_t suppressed_line_ = 0;

    /// `[pid]` of a trap line whose ` ip:` is at `ip`: `comm[pid] DESC ip:` with DESC one of
    /// `general protection fault`, `general protection`, `trap NAME`.
    static size_t trapBracket(string_view t, size_t ip) {
        size_t close = t.rfind("] ", ip);
        if (close == npos) return npos;
        string_view desc = t.substr(close + 2, ip - close - 2);
        if (desc != "general protection fault" && desc != "general protection" &&
            !text::startsWith(desc, "trap "))
            return npos;
        return pidBracket(t, close);
    }
    /// True when `t` ends with its ` error N` / ` error:N` field (nothing printed after it).
    static bool endsAtError(string_view t) {
        t = text::trimRight(t);
        size_t i = t.size();
        while (i > 0 && std::isxdigit(static_cast<unsigned char>(t[i - 1]))) --i;
        if (i == t.size()) return false;
        return text::endsWith(t.substr(0, i), " error ") ||
               text::endsWith(t.substr(0, i), " error:");
    }
    static string_view trapName(string_view desc) {
        return text::startsWith(desc, "trap ") ? desc.substr(5) : desc;
    }

    void emit(const LogLine& line, size_t bracket, Evidence&& e, Sink& out) {
        e.kind = Kind::CpuSegfault;
        string_view t = line.text;
        size_t traps = t.rfind("traps: ", bracket);
        e.process = std::string(traps != npos ? t.substr(traps + 7, bracket - traps - 7)
                                              : commOf(line, bracket));
        e.pid = text::parseDec(t.substr(bracket + 1));
        e.tid = e.pid;  // task_pid_nr(): the faulting thread's id
        if (suppressed_) e.setAttr("callbacks_suppressed", std::to_string(*suppressed_));
        suppressed_.reset();
        stampFromLine(e, line);
        if (!e.module && !e.attr("cpu") && e.attr("error") && endsAtError(t)) {
            held_ = std::move(e);  // its ` in MAP` may come on the next line
            return;
        }
        out.evidence(std::move(e));
    }
};

}  // namespace

std::unique_ptr<Matcher> makeCpuFaultMatcher() {
    return std::make_unique<CpuFaultMatcher>();
}

}  // namespace gpufault
