// ROCr fault lines (FORMATS.md §2.1, §2.2) and the debug agent's output (§9.7): the old
// agent's fault block, and the current agent's stopped-wave lines, which name the kernel of the
// ROCr fault line after them.
//
// Stopped waves (current agent, rocr_debug_agent src/debug_agent.cpp print_wavefronts):
// `wave_N: pc=0x… (kernel_code_entry=0x… <symbol>, kernargs=0x…) (stopped, reason: R|R…)`, older
// agents without the `(kernel_code_entry=…)` part, `kernel_code_entry=not available` when the
// agent has no code object for the pc. Only waves stopped for MEMORY_VIOLATION or ADDRESS_ERROR
// count. The agent prints them (each followed by its registers, memory and disassembly: up to a
// few thousand lines) before ROCr's `Memory access fault by GPU node-N …` line of the same
// fault, so the waves are held until that line: the ROCr record that follows within
// kWaveToFault lines of the last such wave (and has the same pid when both lines state one,
// journald `ident[PID]` or an AMD log prefix) gets `kernel` = the symbol between `<` and `>` as
// printed (none when the wave names none, or when the waves name different kernels: then a
// warning) and attrs `pc`, `kernel_code_entry`, `kernargs`, `stop_reason` of the first wave.
// Waves that no ROCr line follows (the process killed first, the line lost, or printed before
// the waves) make no record of their own (EVIDENCE.md has no kind for them) but a warning that
// names the wave, its kernel and pc.
//
// Kind choice for `HW Exception by GPU node-N (Agent handle: …) reason :GPU Hang|ECC`: it is
// reported by the HSA runtime for a whole device (hang or ECC reset) and kills its queues, like
// the queue-error callback, so it is an `hsa_queue_error` (reason = the printed cause, no
// address). HIP's own `HW Exception Error` log line (hip_log.cpp) gets the same kind.
#include "collectors/runtime_log/rocr_fault.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>

#include "collectors/common/text.h"
#include "collectors/common/wrapped_line.h"
#include "collectors/runtime_log/runtime_common.h"

namespace gpufault {

namespace {

// ROCr's reason strings (§2.1), incl. ROCm ≤1.7's ECC text. Used only to complete a reason
// that a reporter split over two lines.
constexpr std::array<std::string_view, 9> kReasons{
    "Page not present or supervisor privilege",
    "Write access to a read-only page",
    "Execute access to a page marked NX",
    "Host access only",
    "DRAM ECC failure",
    "SRAM ECC failure",
    "Generic hang recovery",
    "Unknown",
    "ECC failure (if supported by HW)",
};

bool iequalPrefix(std::string_view s, std::string_view prefix) {
    if (s.size() < prefix.size()) return false;
    for (size_t i = 0; i < prefix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(s[i])) !=
            std::tolower(static_cast<unsigned char>(prefix[i])))
            return false;
    return true;
}

bool isKnownReason(std::string_view r) {
    for (auto k : kReasons)
        if (r.size() == k.size() && iequalPrefix(k, r)) return true;
    return false;
}

bool isReasonPrefix(std::string_view r) {
    for (auto k : kReasons)
        if (r.size() < k.size() && iequalPrefix(k, r)) return true;
    return false;
}

/// Length of the table reason that starts `r` and is followed by ROCr's closing `.` (a colour
/// reset or another write may follow it on the line), else 0.
size_t knownReasonLength(std::string_view r) {
    for (auto k : kReasons)
        if (r.size() > k.size() && r[k.size()] == '.' && iequalPrefix(r, k)) return k.size();
    return 0;
}

/// `0x…` at the start of `s`, with `xxx` masking (low digits printed as `x`): value with the
/// masked digits as 0, and `*masked` set. `(nil)` → 0.
std::optional<uint64_t> parseAddress(std::string_view s, bool* masked, size_t* used) {
    *masked = false;
    if (s.starts_with("(nil)")) {
        *used = 5;
        return 0;
    }
    if (!s.starts_with("0x") && !s.starts_with("0X")) return std::nullopt;
    size_t n = 0;
    auto v = text::parseHex(s, &n);
    if (!v) return std::nullopt;
    size_t x = 0;
    while (n + x < s.size() && s[n + x] == 'x' && x < 4) ++x;
    if (x > 0 && x < 4 &&
        !(n + x < s.size() && std::isxdigit(static_cast<unsigned char>(s[n + x])))) {
        if (*v >> (64 - 4 * x)) return std::nullopt;
        *v <<= 4 * x;
        *masked = true;
        n += x;
    }
    *used = n;
    return v;
}

/// `s` with bytes outside printable ASCII as `\xHH` (for a warning that quotes junk).
std::string escaped(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

/// The `%p` of `(Agent handle: %p)` in `s`; a null handle prints `(nil)`, whose own `)` is not
/// the closing one.
std::optional<std::string_view> agentHandle(std::string_view s) {
    if (s.find("(Agent handle: (nil))") != std::string_view::npos) return "(nil)";
    return text::after(s, "(Agent handle: ", ")");
}

/// Lines from the last stopped wave to the ROCr line it belongs to: one wave's dump is its
/// registers (a few hundred lines: 512 VGPRs/AGPRs one a line), LDS (up to 160 KiB, 32 bytes a
/// line: 5120 lines), kernargs and disassembly (tens of lines).
constexpr uint64_t kWaveToFault = 8192;

/// `0x` + the hex digits at the start of `s` (none: ""); `*used` set to what was read.
std::string_view hexToken(std::string_view s, size_t* used) {
    *used = 0;
    if (!s.starts_with("0x")) return {};
    size_t n = 2;
    while (n < s.size() && std::isxdigit(static_cast<unsigned char>(s[n]))) ++n;
    if (n == 2) return {};
    *used = n;
    return s.substr(0, n);
}

/// One `wave_N: pc=0x… (…) (stopped, reason: …)` line of the debug agent.
struct StoppedWave {
    std::string_view wave;  ///< `wave_N`
    std::string_view pc, entry, kernargs, reason;
    std::optional<std::string_view> kernel;
};

/// The wave line `t` (starting with `wave_`) when it is stopped; nullopt for any other line.
std::optional<StoppedWave> parseWave(std::string_view t) {
    t = text::trimRight(t);  // trailing blanks a terminal or a paste left
    size_t i = 5;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    if (i == 5 || t.substr(i, 5) != ": pc=") return std::nullopt;
    StoppedWave w;
    w.wave = t.substr(0, i);
    size_t n = 0;
    w.pc = hexToken(t.substr(i + 5), &n);
    if (w.pc.empty()) return std::nullopt;
    std::string_view rest = t.substr(i + 5 + n);
    // The stop part is last; a symbol may contain anything, so it is found from the end.
    constexpr std::string_view kStopped = " (stopped, reason: ";
    size_t sp = rest.rfind(kStopped);
    if (sp == std::string_view::npos || !rest.ends_with(')')) return std::nullopt;
    w.reason = rest.substr(sp + kStopped.size(), rest.size() - 1 - sp - kStopped.size());
    std::string_view mid = rest.substr(0, sp);
    constexpr std::string_view kEntry = " (kernel_code_entry=";
    if (mid.empty()) return w;  // older agents: no entry part
    if (!mid.starts_with(kEntry) || !mid.ends_with(')')) return std::nullopt;
    mid = mid.substr(kEntry.size(), mid.size() - kEntry.size() - 1);
    w.entry = hexToken(mid, &n);  // `not available`: none of the three
    if (w.entry.empty()) return w;
    mid = mid.substr(n);
    constexpr std::string_view kArgs = ", kernargs=";
    size_t ka = mid.rfind(kArgs);
    if (ka != std::string_view::npos) w.kernargs = hexToken(mid.substr(ka + kArgs.size()), &n);
    std::string_view sym = mid.substr(0, ka);
    if (sym.starts_with(" <") && sym.ends_with('>') && sym.size() > 3)
        w.kernel = sym.substr(2, sym.size() - 3);
    return w;
}

/// True when the `|`-joined stop reasons hold a memory fault.
bool isMemoryStop(std::string_view reasons) {
    while (!reasons.empty()) {
        size_t bar = reasons.find('|');
        std::string_view r = text::trim(reasons.substr(0, bar));
        if (r == "MEMORY_VIOLATION" || r == "ADDRESS_ERROR") return true;
        if (bar == std::string_view::npos) break;
        reasons.remove_prefix(bar + 1);
    }
    return false;
}

/// The pid a line states: its AMD log prefix, else its journald/syslog `ident[PID]`.
std::optional<int64_t> linePid(const LogLine& l) {
    return l.log_pid ? l.log_pid : l.ident_pid;
}

std::optional<int64_t> nodeAfter(std::string_view s, std::string_view key) {
    size_t i = s.find(key);
    if (i == std::string_view::npos) return std::nullopt;
    return text::parseDec(s.substr(i + key.size()));
}

/// The rest of a ROCr line cut after `on address`: `%p` (`0x…` or `(nil)`) then the end, a `.`
/// or `(may not be exact address)` — not a line that merely starts with a number.
bool isAddressRest(std::string_view r) {
    size_t n = 0;
    if (r.starts_with("(nil)")) {
        n = 5;
    } else if (r.starts_with("0x") || r.starts_with("0X")) {
        n = 2;
        while (n < r.size() && std::isxdigit(static_cast<unsigned char>(r[n]))) ++n;
        if (n == 2) return false;
    } else {
        return false;
    }
    return n == r.size() || r[n] == '.' || r[n] == '(';
}

/// The first period of a reason not in the table that has text glued right after it (`…
/// privilege.Aborted (core dumped)`: ROCr's `%s.` and then a shell's message without a newline
/// between them), npos when none: a period followed by a blank may be the reason's own.
size_t gluedAfterPeriod(std::string_view reason) {
    for (size_t dot = reason.find('.'); dot != std::string_view::npos;
         dot = reason.find('.', dot + 1))
        if (dot + 1 < reason.size() && std::isalpha(static_cast<unsigned char>(reason[dot + 1])))
            return dot;
    return std::string_view::npos;
}

class RocrFaultMatcher final : public Matcher {
  public:
    void feed(const LogLine& l, Sink& out) override {
        if (cut_.holding()) {
            // A ROCr line wrapped right after `on address` (by hand, in a comment block): a next
            // line that starts, after quote and comment marks, with the address is its rest.
            auto rest = text::trim(l.text);
            size_t lead = rest.find_first_not_of(" *#/>\\\t");
            if (lead != std::string_view::npos && mayBeWrappedRest(l) &&
                isAddressRest(rest.substr(lead))) {
                cut_.append(rest.substr(lead), l);
                return releaseCut(out);  // one rest at most: the joined line is never cut again
            }
            releaseCut(out);
        }
        if (split_ && completeReason(l, out)) return;
        if (agent_ && continueAgent(l, out)) return;
        if (waves_ && l.line - waves_->last_line > kWaveToFault)
            dropWaves(out,
                      "no ROCr `Memory access fault` line followed within " +
                          std::to_string(kWaveToFault) + " lines");
        if (!l.text.empty() && l.text[0] == 'w' && l.text.starts_with("wave_")) return wave(l, out);
        // `… by GPU …` (ROCr, the debug agent) or `… at GPU …` (the earliest debug agent)
        size_t at = l.text.find(" GPU ");
        while (at != std::string_view::npos &&
               !(at >= 2 && (l.text.substr(at - 2, 2) == "by" || l.text.substr(at - 2, 2) == "at")))
            at = l.text.find(" GPU ", at + 1);
        if (at == std::string_view::npos) return;
        std::string_view before = l.text.substr(0, at - 2);
        std::string_view after = l.text.substr(at + 5);
        if (l.text[at - 2] == 'a') {
            // ROCm 2.x's debug agent: `Memory access fault at GPU Node: N`, then `Address: …`
            if (before.ends_with("Memory access fault ") && after.starts_with("Node: ")) {
                agentHeader(l, {}, out);
                agent_->gpu_node = nodeAfter(after, "Node: ");
            }
            return;
        }
        if (before.ends_with("Memory access fault ")) {
            if (after.starts_with("node-")) return rocrLine(l, after, out);
            if (after.starts_with("agent: ")) return agentHeader(l, after.substr(7), out);
        } else if (before.ends_with("HW Exception ") && after.starts_with("node-")) {
            hwException(l, after, out);
        }
    }

    void finish(Sink& out) override {
        if (cut_.holding()) releaseCut(out);
        if (split_ && split_->reason->empty()) split_->reason.reset();
        if (split_) out.evidence(std::move(*split_));
        if (agent_) out.evidence(std::move(*agent_));
        split_.reset();
        agent_.reset();
        if (waves_)
            dropWaves(out,
                      "no ROCr `Memory access fault` line followed before the end of the stream");
    }

    std::optional<uint64_t> openSince() const override {
        if (cut_.holding()) return cut_.lineNumber();
        if (split_) return split_->line;
        if (agent_) return agent_->line;
        return std::nullopt;
    }
    /// Held stopped waves are context of the ROCr line to come (like a launch's Arg lines).
    std::optional<uint64_t> contextSince() const override {
        if (waves_) return waves_->first_line;
        return std::nullopt;
    }
    bool idle() const override { return !openSince() && !waves_; }

  private:
    /// ROCr `Memory access fault by GPU node-%u (Agent handle: %p) on address %p%s. Reason: %s.`
    /// (runtime.cpp VMFaultHandler, ROCm ≥ 1.8; ≤ 1.7 without the Agent handle).
    void rocrLine(const LogLine& l, std::string_view s, Sink& out) {
        if (!cut_.holding() && !releasing_ && text::trimRight(s).ends_with(" on address"))
            return cut_.hold(l);
        Evidence e = rt::baseEvidence(Kind::RocrMemoryFault, l, {}, "amd");
        attachWaves(e, l, out);
        e.gpu_node = text::parseDec(s.substr(5));
        if (auto h = agentHandle(s)) e.setAttr("agent_handle", std::string(*h));
        address(l, s, e, out);
        size_t r = s.find("Reason: ");
        if (r == std::string_view::npos) return out.evidence(std::move(e));
        std::string_view reason = text::trim(s.substr(r + 8));
        if (size_t n = knownReasonLength(reason)) {
            reason = reason.substr(0, n);  // `%s.` then whatever the stream glued on
        } else if (size_t dot = gluedAfterPeriod(reason); dot != std::string_view::npos) {
            reason = text::trimRight(reason.substr(0, dot));
        } else if (reason.ends_with('.')) {
            reason.remove_suffix(1);
        } else if (!isKnownReason(reason) && isReasonPrefix(reason)) {
            e.reason = std::string(reason);
            split_ = std::move(e);  // the rest may follow on the next line
            return;
        }
        if (!reason.empty()) e.reason = std::string(reason);
        out.evidence(std::move(e));
    }

    /// The `on address %p%s.` of a ROCr line (`%s`: "" or "(may not be exact address)") into
    /// `e`. An address followed by anything else (a NUL, junk, a line cut inside it) is not
    /// stored, and a line cut before it gets no address: both with a warning naming the line.
    void address(const LogLine& l, std::string_view s, Evidence& e, Sink& out) {
        size_t a = s.find(" on address ");
        if (a == std::string_view::npos) {
            out.warning({l.line,
                         "ROCr `Memory access fault` line without ` on address `: cut or "
                         "garbled, stored without an address"});
            return;
        }
        std::string_view rest = s.substr(a + 12);
        bool masked = false;
        size_t used = 0;
        auto v = parseAddress(rest, &masked, &used);
        std::string_view tail = rest.substr(v ? used : 0);
        constexpr std::string_view kInexact = "(may not be exact address)";
        if (tail.starts_with(" (m")) tail.remove_prefix(1);  // a blank before it (a re-typed line)
        if (v && (tail.starts_with('.') || tail.starts_with(kInexact))) {
            e.address = v;
            e.address_exact = !masked && !tail.starts_with(kInexact);
            return;
        }
        if (v && !text::trim(tail).empty() && kInexact.starts_with(text::trimRight(tail))) {
            e.address = v;  // cut inside `(may not be exact address)`: the address is whole
            e.address_exact = false;
            out.warning({l.line,
                         "ROCr `Memory access fault` line is cut after its address " +
                             std::string(rest.substr(0, used))});
            return;
        }
        if (v && text::trim(tail).empty()) {  // the line ends in or right after the address
            e.address = v;
            e.address_exact = !masked;
            out.warning({l.line,
                         "ROCr `Memory access fault` line ends right after its address " +
                             std::string(rest.substr(0, used)) + ": it may be cut"});
            return;
        }
        out.warning({l.line,
                     "ROCr `Memory access fault` line: the address `" +
                         escaped(rest.substr(0, std::min<size_t>(rest.size(), 40))) +
                         "` is not `%p.` or `%p(may not be exact address).`: garbled, stored "
                         "without an address"});
    }

    /// Completes a split reason from the table only; true when `l` was its continuation.
    bool completeReason(const LogLine& l, Sink& out) {
        std::string_view next = text::trim(l.text);
        if (next.ends_with('.')) next.remove_suffix(1);
        const std::string& partial = *split_->reason;
        bool done = false;
        for (auto k : kReasons) {
            if (k.size() <= partial.size() || !iequalPrefix(k, partial)) continue;
            std::string_view rest = text::trim(k.substr(partial.size()));
            if (rest.empty() || !next.ends_with(rest)) continue;
            // Only quote/indent marks may precede the continuation (`\\ `, `> `).
            std::string_view lead = next.substr(0, next.size() - rest.size());
            bool marks_only = true;
            for (char c : lead)
                if (std::isalnum(static_cast<unsigned char>(c))) marks_only = false;
            if (!marks_only) continue;
            split_->reason = partial + std::string(k.substr(partial.size()));
            rt::appendRaw(split_->raw, l.raw);
            done = true;
            break;
        }
        if (split_->reason->empty()) split_->reason.reset();  // `Reason: ` and nothing else
        out.evidence(std::move(*split_));
        split_.reset();
        return done;
    }

    /// Old debug agent (HSAHandleMemoryFault.cpp, ROCm 1.9–3.x): `Memory access fault by GPU
    /// agent: NAME`, then `Node: N`, then `Address: 0x<page>xxx (reasons;)`; ROCm 2.x's
    /// `Memory access fault at GPU Node: N` header names the node itself (`name` empty).
    void agentHeader(const LogLine& l, std::string_view name, Sink& out) {
        if (agent_) out.evidence(std::move(*agent_));
        agent_ = rt::baseEvidence(Kind::RocrMemoryFault, l, {}, "amd");
        if (!text::trim(name).empty()) agent_->setAttr("agent", std::string(text::trim(name)));
        agent_->setAttr("producer", "debug_agent");
        agent_lines_ = 0;
    }

    bool continueAgent(const LogLine& l, Sink& out) {
        ++agent_lines_;
        if (auto n = nodeAfter(l.text, "Node: "); n && !agent_->gpu_node) {
            agent_->gpu_node = n;
            rt::appendRaw(agent_->raw, l.raw);
            return true;
        }
        if (size_t a = l.text.find("Address: "); a != std::string_view::npos) {
            std::string_view rest = l.text.substr(a + 9);
            bool masked = false;
            size_t used = 0;
            if (auto v = parseAddress(rest, &masked, &used)) {
                agent_->address = v;
                agent_->address_exact = false;  // a page index with `xxx`, never the byte
            }
            if (auto r = text::after(rest, "(", ")")) {
                std::string_view reason = text::trim(*r);
                if (reason.ends_with(';')) reason.remove_suffix(1);
                if (!reason.empty()) agent_->reason = std::string(reason);
            }
            rt::appendRaw(agent_->raw, l.raw);
            out.evidence(std::move(*agent_));
            agent_.reset();
            return true;
        }
        if (text::trim(l.text).empty() && agent_lines_ < 3) return true;
        out.evidence(std::move(*agent_));
        agent_.reset();
        return false;
    }

    /// A debug-agent `wave_N: …` line: a wave stopped for a memory fault is held (the first
    /// one's fields; the kernel while all such waves agree) for the ROCr line to come.
    void wave(const LogLine& l, Sink& out) {
        auto w = parseWave(l.text);
        if (!w || !isMemoryStop(w->reason)) return;
        std::optional<int64_t> pid = linePid(l);
        if (waves_ && pid && waves_->pid && *pid != *waves_->pid)
            dropWaves(out,
                      "a stopped wave of another pid (" + std::to_string(*pid) +
                          ") followed before any ROCr line");
        if (waves_) {
            ++waves_->count;
            waves_->last_line = l.line;
            if (w->kernel && waves_->kernel && *w->kernel != *waves_->kernel &&
                !waves_->other_kernel) {
                waves_->other_kernel = std::string(*w->kernel);
            } else if (w->kernel && !waves_->kernel && !waves_->other_kernel) {
                waves_->kernel = std::string(*w->kernel);
            }
            if (!waves_->pid) waves_->pid = pid;
            return;
        }
        Waves& h = waves_.emplace();
        h.first_line = h.last_line = l.line;
        h.pid = pid;
        h.wave = std::string(w->wave);
        h.pc = std::string(w->pc);
        h.entry = std::string(w->entry);
        h.kernargs = std::string(w->kernargs);
        h.reason = std::string(w->reason);
        if (w->kernel) h.kernel = std::string(*w->kernel);
    }

    /// Gives the held waves to the ROCr record `e` of line `l` when they belong to it (same pid
    /// when both state one; their distance is checked in feed()).
    void attachWaves(Evidence& e, const LogLine& l, Sink& out) {
        if (!waves_) return;
        std::optional<int64_t> pid = linePid(l);
        if (pid && waves_->pid && *pid != *waves_->pid) return;
        Waves& w = *waves_;
        e.setAttr("pc", w.pc);
        if (!w.entry.empty()) e.setAttr("kernel_code_entry", w.entry);
        if (!w.kernargs.empty()) e.setAttr("kernargs", w.kernargs);
        e.setAttr("stop_reason", w.reason);
        if (w.kernel && !w.other_kernel) {
            e.kernel = *w.kernel;
        } else if (w.other_kernel) {
            out.warning({l.line,
                         "debug agent: the stopped waves before this fault name different "
                         "kernels (" +
                             *w.kernel + ", " + *w.other_kernel + "): no kernel"});
        }
        waves_.reset();
    }

    /// Drops the held waves with a warning that says `why` no ROCr line took them.
    void dropWaves(Sink& out, const std::string& why) {
        const Waves& w = *waves_;
        std::string what = w.wave + " (pc=" + w.pc + ", stopped, reason: " + w.reason + ")";
        if (w.kernel) what += " in " + *w.kernel;
        if (w.count > 1) what += " and " + std::to_string(w.count - 1) + " more stopped wave(s)";
        out.warning(
            {w.first_line, "debug agent: " + what + ": " + why + ", so no fault record names it"});
        waves_.reset();
    }

    /// `HW Exception by GPU node-%u (Agent handle: %p) reason :%s` (runtime.cpp
    /// HwExceptionHandler).
    void hwException(const LogLine& l, std::string_view s, Sink& out) {
        Evidence e = rt::baseEvidence(Kind::HsaQueueError, l, {}, "amd");
        e.gpu_node = text::parseDec(s.substr(5));
        if (auto h = agentHandle(s)) e.setAttr("agent_handle", std::string(*h));
        if (size_t r = s.find("reason :"); r != std::string_view::npos) {
            std::string_view reason = text::trim(s.substr(r + 8));
            if (!reason.empty()) e.reason = std::string(reason);
        }
        e.setAttr("exception", "hw");
        out.evidence(std::move(e));
    }

    /// Stopped waves (memory faults) of the debug agent waiting for their ROCr line.
    struct Waves {
        uint64_t first_line = 0, last_line = 0;
        std::optional<int64_t> pid;
        std::string wave, pc, entry, kernargs, reason;  ///< of the first wave
        std::optional<std::string> kernel;              ///< the first wave's that names one
        std::optional<std::string> other_kernel;        ///< a later wave's, when it differs
        size_t count = 1;
    };

    std::optional<Waves> waves_;
    std::optional<Evidence> split_;  ///< ROCr line whose reason may continue on the next line
    /// A ROCr line that ends at `on address` (its address may be the next line's start).
    WrappedLine cut_;
    bool releasing_ = false;  ///< the held line is being fed: it is never cut again

    /// Feeds the held cut line, joined with its rest or alone (then a record without an
    /// address, with its warning).
    void releaseCut(Sink& out) {
        releasing_ = true;
        feed(cut_.release(), out);
        releasing_ = false;
    }
    std::optional<Evidence> agent_;  ///< old debug-agent block in progress
    int agent_lines_ = 0;
};

}  // namespace

std::unique_ptr<Matcher> makeRocrFaultMatcher() {
    return std::make_unique<RocrFaultMatcher>();
}

}  // namespace gpufault
