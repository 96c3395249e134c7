// AMD_LOG_LEVEL messages of HIP/ROCclr (ROCm/clr), FORMATS.md §3.2–3.4.
#include "collectors/runtime_log/hip_log.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "collectors/common/dispatch_args.h"
#include "collectors/common/same_bytes.h"
#include "collectors/common/text.h"
#include "collectors/runtime_log/error_names.h"
#include "collectors/runtime_log/runtime_common.h"

namespace gpufault {

namespace {

constexpr size_t kMaxThreads = 256;   // (pid, rank, runtime thread) keys with pending args
constexpr size_t kMaxArgs = 64;       // pointer args kept per thread
constexpr size_t kMaxListing = 2048;  // bytes kept of a NoBinaryForGpu device/bundle listing

/// The pointer args a runtime thread logged since its launch began: `args` (parsed), then the
/// `pending` lines (parsed when a sink needs them: dispatch_args.h).
struct ThreadArgs {
    std::optional<int64_t> pid;
    std::optional<int64_t> rank;  ///< `[rankN]:` of its lines (one stream holds every rank's)
    std::string tid;
    std::vector<DispatchArg> args;
    std::string pending;
    size_t npending = 0;  ///< entries in `pending`
    int last_index = -1;
    uint64_t used = 0;
    uint64_t first_line = 0;  ///< the first Arg line of the launch being listed; 0: none
    size_t over = 0;          ///< pointer args of the launch past kMaxArgs (not kept)
    uint64_t end_warned = 0;  ///< first_line of the launch finish() warned about (once each)
};

/// "N pointer arg(s), pid P thread T" of the launch `t` is listing, for warnings.
std::string launchText(const ThreadArgs& t) {
    return std::to_string(t.args.size() + t.npending + t.over) + " pointer arg(s), pid " +
           (t.pid ? std::to_string(*t.pid) : std::string("-")) + " thread " +
           (t.tid.empty() ? std::string("-") : t.tid);
}

/// Forgets the launch `t` was listing (its args, pending lines, first line, overflow count).
void clearLaunch(ThreadArgs& t) {
    t.args.clear();
    t.pending.clear();
    t.npending = 0;
    t.first_line = 0;
    t.over = 0;
}

/// Parses a thread's pending lines into its args.
void resolve(ThreadArgs& t) {
    parsePendingArgs(t.pending, t.args);
    t.pending.clear();
    t.npending = 0;
}

/// text::trim(s), called only when an end of `s` is blank (a kernel name seldom is).
std::string_view trimmed(std::string_view s) {
    auto blank = [](char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
    };
    if (!s.empty() && !blank(s.front()) && !blank(s.back())) return s;
    return text::trim(s);
}

/// Appends `item` to the attr `key` (`; `-separated), bounded.
void appendAttr(Evidence& e, const char* key, std::string_view item) {
    std::string v(e.attr(key).value_or(""));
    if (v.find(item) != std::string::npos || v.size() + item.size() > kMaxListing) return;
    if (!v.empty()) v += "; ";
    v += item;
    e.setAttr(key, std::move(v));
}

/// hip_global.cpp's guarantee() text when a kernel's symbol is missing.
constexpr std::string_view kNoSymbol = "Cannot find Symbol with name: ";

/// hip_fatbin.cpp's report that the fat binary holds no code object for a device.
constexpr std::string_view kNoCompatible = "No compatible code objects found for: ";

/// True when `t` starts with one of the messages HipLogMatcher::message() reads that stand on
/// their own (FORMATS.md §3.3, §3.4): no `ArgN`/`ShaderName` line, no API trace line.
bool isStandaloneMessage(std::string_view t) {
    if (t.size() < 16) return false;
    // their whole printed shape, so that a program's own sentence starting alike is no record
    const std::string_view trimmed = text::trimRight(t);
    if (t.starts_with("Callback: Queue 0x") || t.starts_with("Device::callbackQueue aborting "))
        return true;
    if (t.starts_with("Allocation failed : Device memory : ") ||
        t.starts_with("Allocation failed : Pinned Memory, size :"))
        return true;
    if (trimmed == "Memory allocation has failed!" || trimmed == "Heap buffer allocation failed!" ||
        trimmed == "HW Exception Error")
        return true;
    if (t.starts_with("Cannot find the function: ")) {
        // `%s for module: 0x%x` or `%s ` (the name alone)
        std::string_view rest = trimmed.substr(std::min<size_t>(26, trimmed.size()));
        return rest.find(" for module: 0x") != std::string_view::npos ||
               (!rest.empty() && rest.find(' ') == std::string_view::npos);
    }
    return t.starts_with("Cannot Register fat binary. FatMagic: ") || t.starts_with(kNoCompatible);
}

/// Where HIP's queue callback starts in a line that lost its AMD prefix but kept the file
/// (`rocdevice.cpp Callback: Queue 0x… aborting with …`): after a `*.cpp` word, with the queue
/// address and the abort that follow it; npos otherwise (prose quoting it, a source line).
size_t queueCallbackAfterFile(std::string_view t) {
    size_t c = t.find("Callback: Queue 0x");
    if (c == std::string_view::npos || c < 5) return std::string_view::npos;
    std::string_view before = text::trimRight(t.substr(0, c));
    if (!before.ends_with(".cpp") && !before.ends_with(".cpp:")) return std::string_view::npos;
    return t.find("borting with ", c) != std::string_view::npos ? c : std::string_view::npos;
}

class HipLogMatcher final : public Matcher {
  public:
    void feed(const LogLine& l, Sink& out) override {
        rank_ = l.rank;
        rt::AmdFields amd = rt::amdFieldsAtStart(l);
        if (listing_) {
            if (amd.present && listingLine(l, amd.message)) return;
            listing_ = nullptr;
        }
        if (amd.present) return message(l, amd, amd.message, out);
        anywhere(l, out);
    }

    /// Also warns, once per launch, about Arg lines still waiting for their ShaderName: at the
    /// end of a file they belong to no dispatch. They are kept (gpufaultd calls finish() when a
    /// followed file is quiet; a ShaderName appended later still takes them).
    void finish(Sink& out) override {
        listing_ = nullptr;
        folder_.flush(out);
        warnUnlisted(out);
    }
    /// As finish(), the folds published, not closed (Matcher::quiet()).
    void quiet(Sink& out) override {
        listing_ = nullptr;
        folder_.publish(out);
        warnUnlisted(out);
    }
    /// finish()'s warnings about Arg lines still waiting for their ShaderName.
    void warnUnlisted(Sink& out) {
        for (ThreadArgs& t : threads_) {
            if (t.first_line == 0 || t.end_warned == t.first_line) continue;
            t.end_warned = t.first_line;
            out.warning({t.first_line,
                         "Arg lines of a launch with no ShaderName (" + launchText(t) +
                             ") at the end of the input: not attached to any dispatch (unless "
                             "its ShaderName is appended later)"});
        }
    }

    /// Records held for folding (pending ArgN lines are context and do not hold a resume).
    std::optional<uint64_t> openSince() const override { return folder_.firstLine(); }
    std::optional<uint64_t> contextSince() const override {
        std::optional<uint64_t> first;
        for (const ThreadArgs& t : threads_)
            if (t.first_line != 0 && (!first || t.first_line < *first)) first = t.first_line;
        return first;
    }
    bool idle() const override { return !listing_; }  // folded records wait for no line
    std::optional<uint64_t> foldedSince() const override { return folder_.firstLine(); }
    std::optional<uint64_t> closedFoldAround(uint64_t line) const override {
        return folder_.closedAround(line);
    }
    /// Deferred while a NoBinaryForGpu listing is appended to a held record (listing_).
    void closeFolded(uint64_t before, Sink& out) override {
        if (!listing_) folder_.closeBefore(before, out);
    }
    /// A NoBinaryForGpu listing still appended to (listing_) ends here: the line that ended the
    /// fault's block is none of its lines.
    void closeProcess(uint64_t at,
                      std::optional<int64_t> pid,
                      std::optional<int64_t> rank,
                      Sink& out) override {
        listing_ = nullptr;
        folder_.closeProcess(at, pid, rank, out);
    }
    bool ownsDispatchLines() const override { return true; }

  private:
    /// A line whose AMD prefix is known: the message starts with the format's first word.
    void message(const LogLine& l, const rt::AmdFields& amd, std::string_view m, Sink& out) {
        if (m.empty()) return;
        switch (m[0]) {
            case 'A':
                if (m.starts_with("Arg")) return arg(l.line, amd, m, out);
                if (m.starts_with("Allocation failed")) return alloc(l, amd, m, out);
                // level 0: a failed internal allocation, most often of device memory
                if (m.starts_with("An internal error has occurred. This may be due to "
                                  "insufficient memory"))
                    return alloc(l, amd, m, out);
                break;
            case '[':
                if (m.starts_with("[OCL] Fail to allocate image memory")) {
                    return alloc(l, amd, m, out);
                }
                break;
            case 'S':
                if (m.starts_with("ShaderName : ")) return dispatch(l, amd, m.substr(13), out);
                break;
            case 'G':
                if (m.starts_with("Graph shader name : "))
                    return dispatch(l, amd, m.substr(20), out);
                break;
            case 'C':
                if (m.starts_with("Callback: Queue ")) return queueAbort(l, amd, m, out);
                if (m.starts_with("Cannot find the function: ")) return cannotFind(l, amd, m, out);
                if (m.starts_with(kNoSymbol)) return cannotFindSymbol(l, amd, m, out);
                if (m.starts_with("Cannot Register fat binary. "))
                    return badFatBinary(l, amd, m, out);
                if (m.starts_with("Can't allocate memory size - ")) return alloc(l, amd, m, out);
                break;
            case 'D':
                if (m.starts_with("Device::callbackQueue ")) return queueAbort(l, amd, m, out);
                break;
            case 'h':
                if (m.starts_with("hipErrorNoBinaryForGpu: ")) return noBinary(l, amd, m, out);
                break;
            case 'H':
                if (m.starts_with("HW Exception Error")) return hwException(l, amd, out);
                if (m.starts_with("Heap buffer allocation failed")) return alloc(l, amd, m, out);
                break;
            case 'M':
                if (m.starts_with("Memory allocation has failed")) return alloc(l, amd, m, out);
                break;
            case 'N':
                if (m.starts_with(kNoCompatible)) return noCompatible(l, amd, m, out);
                break;
            case 'V':
                if (m.starts_with("Video memory allocation failed")) return alloc(l, amd, m, out);
                break;
            default:
                break;
        }
        if (size_t r = m.find("Returned hip"); r != std::string_view::npos)
            returned(l, amd, m, r, out);
    }

    /// A line without an AMD prefix at its start: the prefix may sit behind other text (a quote,
    /// a wrapper the decoder did not remove); a few messages are printed without it
    /// (`guarantee()` aborts, direct prints).
    void anywhere(const LogLine& l, Sink& out) {
        rt::AmdFields amd = rt::amdFieldsAnywhere(l);
        if (amd.present) return message(l, amd, amd.message, out);
        std::string_view t = l.text;
        // HIP's messages where the AMD prefix was lost (a wrapper that re-prints stderr lines,
        // a pasted excerpt): at the text's start only, and none of the dispatch lines; the
        // queue callback also behind other text (`rocdevice.cpp Callback: Queue …`).
        if (isStandaloneMessage(t)) return message(l, amd, t, out);
        if (size_t c = queueCallbackAfterFile(t); c != std::string_view::npos)
            return queueAbort(l, amd, t.substr(c), out);
        // The `guarantee()` abort of hip_global.cpp behind a build path (`file:line: `).
        if (size_t i = t.find(kNoSymbol); i != std::string_view::npos)
            return cannotFindSymbol(l, amd, t.substr(i), out);
        if (size_t i = t.find("NoBinaryForGpu: "); i >= 8 && i != std::string_view::npos) {
            if (t.substr(i - 8, 8) == "hipError") return noBinary(l, amd, t.substr(i - 8), out);
        }
        for (std::string_view a :
             {"Video memory allocation failed", "Can't allocate memory size - "}) {
            if (size_t k = t.find(a); k != std::string_view::npos)
                return alloc(l, amd, t.substr(k), out);
        }
    }

    /// The pending args of (pid, rank of the line, runtime tid), made when new (the least recently
    /// used one goes beyond kMaxThreads; a launch it was listing is dropped with a warning at
    /// `line`). A direct-mapped cache of indices is tried first; its entries are checked against
    /// the key, so one left stale by an eviction is only a miss.
    [[gnu::always_inline]] ThreadArgs& thread(const rt::AmdFields& amd,
                                              uint64_t line,
                                              Sink& out) {
        ++tick_;
        const uint64_t k = static_cast<uint64_t>(amd.pid.value_or(-1)) ^
                           (static_cast<uint64_t>(rank_.value_or(-1)) << 32);
        uint32_t& cached = cache_[shortKeyHash(static_cast<int64_t>(k), amd.runtime_tid) >> 58];
        if (cached > 0 && cached <= threads_.size()) {
            ThreadArgs& t = threads_[cached - 1];
            if (t.pid == amd.pid && t.rank == rank_ && sameBytes(t.tid, amd.runtime_tid)) {
                t.used = tick_;
                return t;
            }
        }
        return threadMissed(amd, cached, line, out);
    }
    /// thread() when the cache missed: the list searched, or a new entry.
    [[gnu::noinline]] ThreadArgs& threadMissed(const rt::AmdFields& amd,
                                               uint32_t& cached,
                                               uint64_t line,
                                               Sink& out) {
        for (size_t i = 0; i < threads_.size(); ++i) {
            ThreadArgs& t = threads_[i];
            if (t.pid == amd.pid && t.rank == rank_ && sameBytes(t.tid, amd.runtime_tid)) {
                t.used = tick_;
                cached = static_cast<uint32_t>(i + 1);
                return t;
            }
        }
        if (threads_.size() >= kMaxThreads) {  // evict the least recently used thread
            size_t lru = 0;
            for (size_t i = 1; i < threads_.size(); ++i)
                if (threads_[i].used < threads_[lru].used) lru = i;
            const ThreadArgs& v = threads_[lru];
            if (v.first_line != 0)
                out.warning({v.first_line,
                             "Arg lines of a launch with no ShaderName yet (" + launchText(v) +
                                 ") dropped at line " + std::to_string(line) + ": more than " +
                                 std::to_string(kMaxThreads) +
                                 " runtime threads had Arg lines pending at once"});
            threads_.erase(threads_.begin() + static_cast<long>(lru));
        }
        threads_.push_back({amd.pid, rank_, std::string(amd.runtime_tid), {}, {}, 0, -1, tick_});
        cached = static_cast<uint32_t>(threads_.size());
        return threads_.back();
    }

    /// The first ` = ` of `s` at or after `from` (as `s.find(" = ", from)`), found by its '='.
    static size_t findSpacedEquals(std::string_view s, size_t from) {
        for (size_t q = from + 1; q + 1 < s.size(); ++q) {
            const void* p = std::memchr(s.data() + q, '=', s.size() - 1 - q);
            if (!p) break;
            q = static_cast<size_t>(static_cast<const char*>(p) - s.data());
            if (s[q - 1] == ' ' && s[q + 1] == ' ') return q - 1;
        }
        return std::string_view::npos;
    }

    /// `Arg%d: %s %s = ptr:%p obj:[%p-%p]` (pointer) or `Arg%d: %s %s = val:%s` (not a pointer),
    /// rocvirtual.cpp, LOG_KERN. A new Arg0 (or a lower index) starts a new launch. A pointer
    /// line is kept unparsed (its text copied to the thread's pending entries) while the launch
    /// has room (kMaxArgs, kMaxPendingLaunch) and the text is short (kMaxPendingArgText); else
    /// the pending ones and it are parsed now.
    void arg(uint64_t line, const rt::AmdFields& amd, std::string_view s, Sink& out) {
        // The index as text::parseDec() reads it (digits; a sign only on the cold path), inline.
        size_t colon = 3;
        int64_t index = 0;
        if (s.size() > 3 && s[3] == '-') {
            size_t n = 0;
            auto v = text::parseDec(s.substr(3), &n);
            if (!v) return;
            index = *v;
            colon = 3 + n;
        } else {
            for (; colon < s.size() && s[colon] >= '0' && s[colon] <= '9'; ++colon)
                index = std::min<int64_t>(index * 10 + (s[colon] - '0'), 100001);
            if (colon == 3) return;
        }
        if (index < 0 || index > 100000 || colon >= s.size() || s[colon] != ':') return;
        const size_t eq = findSpacedEquals(s, colon);
        if (eq == std::string_view::npos) return;
        ThreadArgs& t = thread(amd, line, out);
        if (index <= t.last_index) dropLaunch(t, line, "a new launch's Arg lines", out);
        if (t.first_line == 0) t.first_line = line;
        t.last_index = static_cast<int>(index);
        std::string_view value = s.substr(eq + 3);
        if (!value.starts_with("ptr:")) return;
        std::string_view after = s.substr(colon + 1);
        if (t.args.size() + t.npending < kMaxArgs && after.size() <= kMaxPendingArgText &&
            t.pending.size() + sizeof(PendingArgHead) + after.size() <= kMaxPendingLaunch) {
            appendPendingArg(t.pending, static_cast<int>(index), after, eq - colon - 1);
            ++t.npending;
            return;
        }
        resolve(t);  // the count of parsed args decides (a pending line may hold no pointer)
        if (t.args.size() >= kMaxArgs) {
            ++t.over;
            return;
        }
        DispatchArg& a = t.args.emplace_back();
        if (!parseDispatchArg(static_cast<int>(index), after.substr(0, eq - colon - 1), value, a))
            t.args.pop_back();
    }

    /// Drops the launch `t` was listing (Arg lines, no ShaderName yet) when `what` at `line` ends
    /// it, with a warning: its args would otherwise become the operands of the thread's next
    /// dispatch (FORMATS.md §3.2: a launch's Arg lines come before its ShaderName).
    static void dropLaunch(ThreadArgs& t, uint64_t line, std::string_view what, Sink& out) {
        if (t.first_line != 0)
            out.warning({t.first_line,
                         "Arg lines of a launch with no ShaderName (" +
                             std::to_string(t.args.size() + t.npending + t.over) +
                             " pointer arg(s)) ended by " + std::string(what) + " at line " +
                             std::to_string(line) + ": dropped"});
        clearLaunch(t);
    }

    /// `ShaderName : %s` (rocvirtual.cpp, LOG_KERN) and `Graph shader name : %s`.
    void dispatch(const LogLine& l, const rt::AmdFields& amd, std::string_view name, Sink& out) {
        name = trimmed(name);
        if (name.empty()) return;
        ThreadArgs& t = thread(amd, l.line, out);
        if (t.over > 0)  // the cap stays (memory), but not silently
            out.warning({l.line,
                         "launch of " + std::string(name) + ": " + std::to_string(t.over) +
                             " pointer arg(s) past the first " + std::to_string(kMaxArgs) +
                             " not kept as operands"});
        t.over = 0;
        // One Dispatch reused: a sink that swaps the strings with older ones (StoreSink) leaves
        // their capacity here, so a name is copied without an allocation; every field is set
        // anew.
        Dispatch& d = dispatch_;
        d.line = l.line;
        d.context_line = t.first_line != 0 ? t.first_line : l.line;
        t.first_line = 0;
        d.time = l.time;
        if (!d.time.runtime_us) d.time.runtime_us = amd.runtime_us;
        d.pid = amd.pid;
        d.rank = l.rank;
        if (!sameBytes(d.runtime_tid, amd.runtime_tid)) d.runtime_tid.assign(amd.runtime_tid);
        assignBytes(d.kernel, name);
        d.args.swap(t.args);  // the thread's next launch starts empty (with the old capacity)
        t.args.clear();
        d.pending_args.swap(t.pending);
        t.pending.clear();
        t.npending = 0;
        if (!out.takesPendingArgs()) resolveArgs(d);
        out.dispatch(std::move(d));
        t.last_index = -1;
    }

    /// `%s: Returned %s : %s` (HIP API trace, LOG_API): a runtime_error unless hipSuccess or a
    /// benign polled status; missing_code_object for NoBinaryForGpu/InvalidDeviceFunction.
    void returned(
        const LogLine& l, const rt::AmdFields& amd, std::string_view s, size_t r, Sink& out) {
        if (r < 2 || s.substr(r - 2, 2) != ": ") return;
        std::string_view name = rt::identAt(s, r + 9);
        if (name.size() <= 8 || errnames::isBenign(name)) return;
        // The API call returned: a launch its thread was listing Arg lines for ended without
        // a ShaderName (it failed); those args are no later launch's.
        if (ThreadArgs& t = thread(amd, l.line, out); t.first_line != 0)
            dropLaunch(t, l.line, "the API call's return", out);
        size_t api_end = r - 2, api_start = api_end;
        while (api_start > 0 && rt::isIdentChar(s[api_start - 1])) --api_start;
        Kind k = errnames::isMissingCodeObject(name) ? Kind::MissingCodeObject : Kind::RuntimeError;
        Evidence e = rt::baseEvidence(k, l, amd, "amd");
        e.reason = std::string(name);
        if (api_end > api_start)
            e.setAttr("api", std::string(s.substr(api_start, api_end - api_start)));
        folder_.add(std::move(e), out);
    }

    /// `Callback: Queue %p aborting with error : %s code: 0x%x` (and `Aborting … Code: 0x%x
    /// Available Free mem : %zu MB`), rocdevice.cpp/rocvirtual.cpp; older `Device::callbackQueue
    /// aborting with error : %s code: 0x%x` and `… aborting with status: 0x%x`.
    void queueAbort(const LogLine& l, const rt::AmdFields& amd, std::string_view s, Sink& out) {
        size_t w = s.find("borting with ");
        if (w == std::string_view::npos) return;
        Evidence e = rt::baseEvidence(Kind::HsaQueueError, l, amd, "amd");
        if (auto q = text::after(s.substr(0, w), "Queue 0x"))
            e.setAttr("queue", "0x" + std::string(*q));
        std::string_view rest = s.substr(w + 13);
        if (rest.starts_with("error : HSA_STATUS_")) {
            std::string_view name = rt::identAt(rest, 8);
            // Only a complete name (followed by its `: text`) is a reason: never guess a cut one.
            if (rest.substr(8 + name.size(), 1) == ":") e.reason = std::string(name);
        }
        for (std::string_view key : {" code: 0x", " Code: 0x", "status: 0x"}) {
            if (size_t c = rest.find(key); c != std::string_view::npos) {
                size_t n = 0;
                if (auto v = text::parseHex(rest.substr(c + key.size() - 2), &n)) {
                    e.setAttr("code", text::hexAddr(*v));
                    // the older `aborting with status: 0x%x` prints only the code
                    if (!e.reason)
                        if (auto name = errnames::hsaStatusName(*v)) e.reason = std::string(*name);
                    break;
                }
            }
        }
        out.evidence(std::move(e));
    }

    /// `Cannot find the function: %s for module: 0x%x` (hip_module.cpp) and
    /// `Cannot find the function: %s ` (hip_code_object.cpp).
    void cannotFind(const LogLine& l, const rt::AmdFields& amd, std::string_view s, Sink& out) {
        std::string_view rest = text::trimLeft(s.substr(26));
        std::string_view name = rest.substr(0, rest.find_first_of(" \t"));
        if (name.empty()) return;
        Evidence e = rt::baseEvidence(Kind::MissingCodeObject, l, amd, "amd");
        e.kernel = std::string(name);
        if (auto m = text::after(rest, "for module: ")) e.setAttr("module_handle", std::string(*m));
        folder_.add(std::move(e), out);
    }

    /// `Cannot find Symbol with name: %s` (hip_global.cpp, DeviceFunc: the `guarantee()` before
    /// abort() when a kernel's symbol is not in its program, FORMATS.md §3.3): the kernel, as
    /// printed; a name cut by the line's end is kept as printed too (no length to check it by).
    void cannotFindSymbol(const LogLine& l,
                          const rt::AmdFields& amd,
                          std::string_view s,
                          Sink& out) {
        std::string_view rest = text::trim(s.substr(kNoSymbol.size()));
        std::string_view name = rest.substr(0, rest.find_first_of(" \t\"'"));
        if (name.empty() || name[0] == '%')
            return;  // the format string itself (source, a build log)
        Evidence e = rt::baseEvidence(Kind::MissingCodeObject, l, amd, "amd");
        e.kernel = std::string(name);
        folder_.add(std::move(e), out);
    }

    /// `hipErrorNoBinaryForGpu: Unable to find code object for all current devices!` (then its
    /// `Devices:`/`Bundled Code Objects:` listing), `…: Couldn't find binary for file: %s` /
    /// `ptr: 0x%x` (hip_code_object.cpp, hip_fatbin.cpp), also as a `guarantee()` message.
    void noBinary(const LogLine& l, const rt::AmdFields& amd, std::string_view s, Sink& out) {
        Evidence e = rt::baseEvidence(Kind::MissingCodeObject, l, amd, "amd");
        e.reason = "hipErrorNoBinaryForGpu";
        if (auto f = text::after(s, "binary for file: ")) e.setAttr("file", std::string(*f));
        // `ptr: 0x%x` (hip_fatbin.cpp): the host address of the fat binary, as printed (`%x`:
        // lower-case hex, no padding); kept so that it folds apart from other binaries.
        if (auto v = text::after(s, "binary for ptr: 0x"); v && !v->empty()) {
            size_t n = 0;
            if (text::parseHex(*v, &n) && n == v->size()) e.setAttr("ptr", "0x" + std::string(*v));
        }
        bool listing =
            amd.present && s.find("Unable to find code object") != std::string_view::npos;
        Evidence* held = folder_.add(std::move(e), out);
        listing_ = listing ? held : nullptr;
        section_ = 0;
    }

    /// One line of the NoBinaryForGpu listing (`  Devices:`, `    %s - [%s]`,
    /// `  Bundled Code Objects:`); false when the listing has ended.
    bool listingLine(const LogLine& l, std::string_view m) {
        m = text::trim(m);
        if (m == "Devices:") {
            section_ = 1;
        } else if (m == "Bundled Code Objects:") {
            section_ = 2;
        } else {
            size_t sep = m.find(" - [");
            if (section_ == 0 || sep == std::string_view::npos || !m.ends_with("]")) return false;
            std::string item = std::string(m.substr(0, sep)) + " " + std::string(m.substr(sep + 3));
            appendAttr(*listing_, section_ == 1 ? "devices" : "bundles", item);
        }
        rt::appendRaw(listing_->raw, l.raw);
        return true;
    }

    /// Allocation failures (hip_memory.cpp level 1, rocdevice/rocmemory): attrs in bytes. The
    /// `%zu` values are kept as the decimal text printed (up to 20 digits: a size_t, which may
    /// be above INT64_MAX, e.g. a negative size computed in size_t).
    void alloc(const LogLine& l, const rt::AmdFields& amd, std::string_view s, Sink& out) {
        Evidence e = rt::baseEvidence(Kind::AllocFailure, l, amd, "amd");
        for (std::string_view key : {"required :", "free :", "total :", "size :"}) {
            if (auto v = text::after(s, key, " |,")) {
                size_t n = 0;
                while (n < v->size() && (*v)[n] >= '0' && (*v)[n] <= '9') ++n;
                if (n > 0 && n <= 20)
                    e.setAttr(std::string(key.substr(0, key.size() - 2)),
                              std::string(v->substr(0, n)));
            }
        }
        if (size_t c = s.find("size - 0x"); c != std::string_view::npos) {
            if (auto v = text::parseHex(s.substr(c + 7))) e.setAttr("size", std::to_string(*v));
        }
        if (s.find("Device memory") != std::string_view::npos) e.setAttr("memory", "device");
        if (s.find("Pinned Memory") != std::string_view::npos) e.setAttr("memory", "pinned");
        if (s.find("image memory") != std::string_view::npos) e.setAttr("memory", "image");
        if (auto v = text::after(s, "hsa_status: ")) {
            std::string_view status = text::trim(*v);
            if (!status.empty() && status.size() <= 11)
                e.setAttr("hsa_status", std::string(status));
        }
        out.evidence(std::move(e));
    }

    /// `No compatible code objects found for: %s, value of HIP_FORCE_SPIRV_CODEOBJECT: %d`
    /// (hip_fatbin.cpp, level 1, ROCm 6.x+): no code object of the fat binary for that target; attr
    /// `target` (the device's gfx name as printed).
    void noCompatible(const LogLine& l, const rt::AmdFields& amd, std::string_view s, Sink& out) {
        Evidence e = rt::baseEvidence(Kind::MissingCodeObject, l, amd, "amd");
        std::string_view target = s.substr(kNoCompatible.size());
        target = text::trim(target.substr(0, target.find_first_of(", ")));
        if (!target.empty()) e.setAttr("target", std::string(target));
        folder_.add(std::move(e), out);
    }

    /// `Cannot Register fat binary. FatMagic: %u version: %u ` (hip_platform.cpp): the program's
    /// fat binary wrapper is not HIP's (a CUDA build, a corrupt section): no code object loads.
    void badFatBinary(const LogLine& l, const rt::AmdFields& amd, std::string_view s, Sink& out) {
        Evidence e = rt::baseEvidence(Kind::MissingCodeObject, l, amd, "amd");
        if (auto v = text::after(s, "FatMagic: ", " ")) e.setAttr("fat_magic", std::string(*v));
        if (auto v = text::after(s, "version: ", " ")) e.setAttr("fat_version", std::string(*v));
        folder_.add(std::move(e), out);
    }

    /// `HW Exception Error` (rocdevice.cpp, level 1, on the HSA event thread): the device hit
    /// a hardware exception; an hsa_queue_error without a status name (see rocr_fault.cpp).
    void hwException(const LogLine& l, const rt::AmdFields& amd, Sink& out) {
        Evidence e = rt::baseEvidence(Kind::HsaQueueError, l, amd, "amd");
        e.setAttr("exception", "hw");
        out.evidence(std::move(e));
    }

    std::vector<ThreadArgs> threads_;
    std::array<uint32_t, 64> cache_{};  ///< by key hash: index + 1 into threads_ (0: none)
    Dispatch dispatch_;                 ///< reused for every dispatch (see dispatch())
    uint64_t tick_ = 0;
    std::optional<int64_t> rank_;  ///< the `[rankN]:` of the line being fed
    rt::Folder folder_;
    Evidence* listing_ = nullptr;  ///< held NoBinaryForGpu record collecting its listing
    int section_ = 0;              ///< 1 Devices, 2 Bundled Code Objects
};

}  // namespace

std::unique_ptr<Matcher> makeHipLogMatcher() {
    return std::make_unique<HipLogMatcher>();
}

}  // namespace gpufault
