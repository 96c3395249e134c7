// compute-sanitizer / cuda-memcheck memcheck reports (FORMATS.md §9.5). One record per
// `Invalid <segment> <read|write|atomic> of size N[ bytes]` report:
//   ========= Invalid __global__ write of size 4 bytes
//   ========= Invalid __global__ atomic of size 4 bytes                (CUDA 11.5+ memcheck)
//   =========     at KERNEL+0xOFF[ in FILE:LINE]          (2023+)
//   =========     at KERNEL:0xOFF in FILE:LINE             (docs sample)
//   =========     at 0xOFF in KERNEL                       (2021–22, no line info)
//   =========     at 0xOFF in FILE:LINE:KERNEL             (cuda-memcheck)
//   =========     by thread (x,y,z) in block (x,y,z)
//   =========     Address 0x… is out of bounds|misaligned  /  Access to|at 0x… is out of bounds
//   =========     Address 0x… is not readable|not readable/writable with atomic operations
//   =========     and is N bytes after|before the nearest allocation at 0x… of size S bytes
// Continuation lines are indented under the prefix (`=========` unless `--prefix`); a bare prefix
// line or any other top-level line (`Program hit …`, `ERROR SUMMARY`, `Malloc/Free error …`,
// `Leaked …`) ends the report. Those other reports are not memory-access faults: no record.
// Lines without the prefix (program output interleaved with the report) are skipped.
// An atomic is a read-modify-write: EVIDENCE.md's `access` has no `atomic`, so it is stored as
// `write` (the stricter permission it needs) with attr access_op=atomic.
#include "collectors/runtime_log/sanitizer.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "collectors/common/text.h"

namespace gpufault {

namespace {

using std::string_view;
constexpr size_t npos = string_view::npos;
constexpr int kMaxForeign = 16;  ///< unprefixed lines in a row that end a report
constexpr string_view kDefaultPrefix = "=========";
/// Longest `--prefix` taken as a report's line prefix: every continuation line is searched for
/// it, and a longer "prefix" (any text glued before `Invalid __`) would make that quadratic.
constexpr size_t kMaxPrefix = 64;

bool isDigit(char c) {
    return c >= '0' && c <= '9';
}
bool isHex(char c) {
    return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/// Position of the last `sep` + `0x` + hex digits in `s` that ends `s` or is followed by a space.
size_t offsetMarker(string_view s, string_view sep) {
    for (size_t p = s.rfind(sep); p != npos; p = p ? s.rfind(sep, p - 1) : npos) {
        size_t i = p + sep.size();
        while (i < s.size() && isHex(s[i])) ++i;
        if (i > p + sep.size() && (i == s.size() || s[i] == ' ')) return p;
    }
    return npos;
}

/// cuda-memcheck `FILE:LINE:KERNEL`: the KERNEL part, or nullopt when `s` is not of that shape.
std::optional<string_view> afterFileLine(string_view s) {
    const size_t paren = s.find('(');  // once: a line of ':' must stay linear
    for (size_t c = s.find(':'); c != npos && paren > c; c = s.find(':', c + 1)) {
        size_t j = c + 1;
        while (j < s.size() && isDigit(s[j])) ++j;
        if (j > c + 1 && j + 1 < s.size() && s[j] == ':' && s[j + 1] != ':') return s.substr(j + 1);
    }
    return std::nullopt;
}

/// The `at …` line (without `at `): kernel as printed, attrs pc_offset and source.
void parseAt(string_view r, Evidence& e) {
    size_t n = 0;
    if (text::startsWith(r, "0x")) {  // 2021–22 and cuda-memcheck: `0xOFF in …`
        auto off = text::parseHex(r, &n);
        if (!off || !text::startsWith(r.substr(n), " in ")) return;
        e.setAttr("pc_offset", text::hexAddr(*off));
        string_view k = text::trim(r.substr(n + 4));
        if (auto kk = afterFileLine(k)) {
            e.setAttr("source", std::string(k.substr(0, k.size() - kk->size() - 1)));
            k = *kk;
        }
        if (!k.empty()) e.kernel = std::string(k);
        return;
    }
    size_t p = offsetMarker(r, "+0x");
    if (p == npos) p = offsetMarker(r, ":0x");  // docs: `kernel():0x160 in file:6`
    if (p == npos) {
        // `at NAME in FILE:LINE` with no offset printed (seen for CUTLASS/CuTe device functions):
        // only with the whole `FILE:LINE` after the last ` in `
        const size_t in = r.rfind(" in ");
        if (in == npos || in == 0) return;
        string_view file = text::trim(r.substr(in + 4));
        const size_t colon = file.rfind(':');
        if (colon == npos || colon == 0 || colon + 1 == file.size() ||
            !std::all_of(
                file.begin() + static_cast<std::ptrdiff_t>(colon) + 1, file.end(), isDigit))
            return;
        e.kernel = std::string(text::trim(r.substr(0, in)));
        e.setAttr("source", std::string(file));
        return;
    }
    if (p == 0) return;  // cut or unknown layout: no kernel guessed
    e.kernel = std::string(r.substr(0, p));
    string_view rest = r.substr(p + 1);
    if (auto off = text::parseHex(rest, &n)) e.setAttr("pc_offset", text::hexAddr(*off));
    rest.remove_prefix(n);
    if (text::startsWith(rest, " in "))
        e.setAttr("source", std::string(text::trim(rest.substr(4))));
}

/// `and is N bytes after|before the nearest allocation at 0x… of size S bytes`, or `and is
/// inside the nearest allocation at 0x… of size S bytes` (a use after free, a racing free; seen
/// in pytorch/pytorch#196209's report: distance 0, side `inside`) → attrs.
void parseNearest(string_view r, Evidence& e) {
    string_view side;
    if (text::startsWith(r, "inside the nearest allocation")) {
        e.setAttr("nearest_distance", "0");
        side = "inside";
    } else {
        size_t n = 0;
        auto dist = text::parseGroupedDec(r, &n);
        if (!dist) return;
        r.remove_prefix(n);
        side = text::startsWith(r, " bytes after ")    ? "after"
               : text::startsWith(r, " bytes before ") ? "before"
                                                       : "";
        if (side.empty()) return;
        e.setAttr("nearest_distance", std::to_string(*dist));
    }
    e.setAttr("nearest_side", std::string(side));
    if (auto at = text::after(r, "nearest allocation at ")) {
        if (auto base = text::parseHex(*at)) e.setAttr("nearest_alloc", text::hexAddr(*base));
    }
    if (auto sz = text::after(r, " of size ")) {
        if (auto v = text::parseGroupedDec(*sz))
            e.setAttr("nearest_alloc_size", std::to_string(*v));
    }
}

/// One continuation line of a report (trimmed).
void parseDetail(string_view d, Evidence& e) {
    if (text::startsWith(d, "at ")) {
        if (!e.kernel && !e.attr("pc_offset")) parseAt(d.substr(3), e);
    } else if (text::startsWith(d, "by thread ")) {
        if (auto t = text::after(d, "by thread ", " ")) e.setAttr("thread", std::string(*t));
        if (auto b = text::after(d, " in block ", " ")) e.setAttr("block", std::string(*b));
    } else if (text::startsWith(d, "Address 0x") || text::startsWith(d, "Access to 0x") ||
               text::startsWith(d, "Access at 0x")) {
        string_view a = d.substr(d.find("0x"));
        size_t n = 0;
        // `0x%llx is …`: a value that ends the line was cut inside it (no address), except in
        // a device-heap report, whose `Address 0x%llx` line ends with it
        const bool heap = e.attr("heap_error").has_value();
        if (auto v = text::parseHex(a, &n);
            v && !e.address && ((n < a.size() && a[n] == ' ') || (heap && n == a.size()))) {
            e.address = *v;
            e.address_exact = true;
            if (text::startsWith(a.substr(n), " is "))
                e.setAttr("violation", std::string(a.substr(n + 4)));
        }
    } else if (text::startsWith(d, "and is ")) {
        parseNearest(d.substr(7), e);
    }
}

class SanitizerMatcher final : public Matcher {
  public:
    void feed(const LogLine& line, Sink& out) override {
        // MPI ranks share one log and each runs its own sanitizer: a line continues (or ends)
        // the report of its own rank only
        if (line.rank != rank_) select(line.rank, out);
        // every top-level line of a run is under the prefix: most lines of other producers
        // have no `=` (a custom --prefix may have none: then every line is looked at)
        const bool prefixed =
            run_prefix_ != kDefaultPrefix ||
            (!line.text.empty() && std::memchr(line.text.data(), '=', line.text.size()) != nullptr);
        const std::optional<TopLevel> top = prefixed ? topLevel(line.text) : std::nullopt;
        if (top && runBoundary(top->text)) {
            flush(out);  // a run's last (or a new run's first) line ends the report
            out.runBoundary(line.line, line.rank);
            return;
        }
        if (startReport(line, out) || (top && startHwException(line, *top, out))) return;
        if (!cur_) return;
        auto body = content(line.text);
        if (!body) {  // program output between the report's lines
            if (++foreign_ > kMaxForeign) flush(out);
            return;
        }
        foreign_ = 0;
        if (body->size() < 2 || ((*body)[0] != ' ' && (*body)[0] != '\t') ||
            ((*body)[1] != ' ' && (*body)[1] != '\t')) {
            flush(out);  // bare prefix (separator) or a new top-level message
            return;
        }
        appendRaw(line);
        parseDetail(text::trim(*body), *cur_);
    }

    void finish(Sink& out) override {
        flush(out);
        std::sort(parked_.begin(), parked_.end(), [](const Parked& a, const Parked& b) {
            return a.cur.line < b.cur.line;
        });
        for (auto& p : parked_) out.evidence(std::move(p.cur));
        parked_.clear();
    }
    std::optional<uint64_t> openSince() const override {
        std::optional<uint64_t> first;
        if (cur_) first = cur_->line;
        for (const auto& p : parked_)
            if (!first || p.cur.line < *first) first = p.cur.line;
        return first;
    }

  private:
    /// A line under the default prefix or the `--prefix` the last report carried, wherever the
    /// prefix starts (CI time stamps and launchers put their own text before it): the text
    /// after the prefix, and which prefix it was.
    struct TopLevel {
        string_view text;
        string_view prefix;
    };
    std::optional<TopLevel> topLevel(string_view t) const {
        if (auto rest = afterPrefix(t, kDefaultPrefix)) return TopLevel{*rest, kDefaultPrefix};
        if (run_prefix_ != kDefaultPrefix)
            if (auto rest = afterPrefix(t, run_prefix_)) return TopLevel{*rest, run_prefix_};
        return std::nullopt;
    }

    /// compute-sanitizer's `COMPUTE-SANITIZER` (a run starts) and `ERROR SUMMARY: N errors` (it
    /// ended) lines, `top` being the text after the prefix.
    static bool runBoundary(string_view top) {
        string_view r = text::trim(top);
        return r == "COMPUTE-SANITIZER" || text::startsWith(r, "ERROR SUMMARY:");
    }

    /// Another rank's report in progress, while lines of other ranks are read.
    struct Parked {
        std::optional<int64_t> rank;
        Evidence cur;
        std::string prefix;
        int foreign;
    };
    static constexpr size_t kMaxParked = 1024;

    /// Makes `rank`'s report (if any) the one in progress, parking the current one.
    void select(std::optional<int64_t> rank, Sink& out) {
        if (cur_) {
            if (parked_.size() >= kMaxParked) {  // more ranks than any job: the oldest ends
                out.evidence(std::move(parked_.front().cur));
                parked_.erase(parked_.begin());
            }
            parked_.push_back({rank_, std::move(*cur_), std::move(prefix_), foreign_});
        }
        cur_.reset();
        prefix_.clear();
        foreign_ = 0;
        rank_ = rank;
        for (auto it = parked_.begin(); it != parked_.end(); ++it) {
            if (it->rank != rank) continue;
            cur_ = std::move(it->cur);
            prefix_ = std::move(it->prefix);
            foreign_ = it->foreign;
            parked_.erase(it);
            break;
        }
    }

    std::optional<int64_t> rank_;  ///< the rank of the report in progress (of the last line)
    std::vector<Parked> parked_;   ///< other ranks' reports in progress
    std::optional<Evidence> cur_;  ///< the report in progress
    std::string prefix_;           ///< its line prefix ("" when it had none)
    std::string run_prefix_{kDefaultPrefix};  ///< the last report's prefix, when it had one
    int foreign_ = 0;

    /// memcheck's imprecise hardware exception reports of a memory access (FORMATS.md §9.5
    /// "Hardware exceptions": `Warp Illegal Address`, `Warp Misaligned Address`, `Warp
    /// Out-of-range Address`, `Out-of-range Shared or Local Address`, the old `Fatal UVM GPU
    /// fault of type … due to invalid address`) as a top-level line under the prefix: a report
    /// without an address (none is printed), attr `exception` = the header; its `at`/`by
    /// thread` lines are read as a report's. Also the device heap's malloc/free reports (attr
    /// `heap_error`, with the `Address` they print). False for any other line.
    bool startHwException(const LogLine& line, const TopLevel& top, Sink& out) {
        if (top.text.empty() || top.text[0] == ' ' || top.text[0] == '\t') return false;
        string_view h = text::trimRight(top.text);
        bool known = h == "Warp Illegal Address" || h == "Warp Misaligned Address" ||
                     h == "Warp Out-of-range Address" ||
                     h == "Out-of-range Shared or Local Address" ||
                     (text::startsWith(h, "Fatal UVM GPU fault of type ") &&
                      text::endsWith(h, " due to invalid address"));
        // the device heap's `Malloc/Free error encountered : Double free` (`Invalid pointer to
        // free`, `Heap corruption`), then `at`, `by thread` and `Address 0x…` lines
        constexpr string_view kHeap = "Malloc/Free error encountered : ";
        const bool heap = text::startsWith(h, kHeap) && h.size() > kHeap.size();
        if (!known && !heap) return false;
        flush(out);
        Evidence e;
        if (heap) {
            e.setAttr("heap_error", std::string(h.substr(kHeap.size())));
        } else {
            e.setAttr("exception", std::string(h));
        }
        open(std::move(e), line, std::string(top.prefix));
        return true;
    }

    /// Makes `e`, a report headed by `line`, the one in progress, with its line `prefix`.
    void open(Evidence&& e, const LogLine& line, std::string prefix) {
        e.kind = Kind::SanitizerReport;
        e.vendor = "nvidia";
        e.line = line.line;
        e.time = line.time;
        e.rank = line.rank;
        cur_ = std::move(e);
        prefix_ = std::move(prefix);
        if (!prefix_.empty()) run_prefix_ = prefix_;
        foreign_ = 0;
        appendRaw(line);
    }

    /// A header line `Invalid __global__|__shared__|__local__ read|write|atomic of size N`: flushes
    /// the report in progress and opens a new one. False for any other line.
    bool startReport(const LogLine& line, Sink& out) {
        string_view t = line.text;
        size_t p = t.find("Invalid __");
        if (p == npos) return false;
        string_view h = t.substr(p + 8);
        size_t seg_end = h.find("__ ", 2);
        if (seg_end == npos) return false;
        string_view seg = h.substr(2, seg_end - 2);
        if (seg != "global" && seg != "shared" && seg != "local") return false;
        h.remove_prefix(seg_end + 3);
        // `?` when memcheck cannot tell the access (a Triton kernel's shared memory): no access
        string_view access = text::startsWith(h, "read ")     ? "read"
                             : text::startsWith(h, "write ")  ? "write"
                             : text::startsWith(h, "atomic ") ? "atomic"
                             : text::startsWith(h, "? ")      ? "?"
                                                              : "";
        if (access.empty() || !text::startsWith(h.substr(access.size()), " of size ")) return false;
        auto size = text::parseGroupedDec(h.substr(access.size() + 9));
        if (!size) return false;
        flush(out);
        Evidence e;
        if (access == "atomic") {
            e.access = "write";
            e.setAttr("access_op", "atomic");
        } else if (access == "?") {
            e.setAttr("access_op", "?");
        } else {
            e.access = std::string(access);
        }
        e.setAttr("segment", std::string(seg));
        e.setAttr("access_size", std::to_string(*size));
        string_view before = text::trimRight(t.substr(0, p));
        string_view prefix = before;  // "" when none
        if (text::endsWith(before, kDefaultPrefix)) {
            prefix = kDefaultPrefix;
        } else if (!before.empty()) {
            size_t sp = before.find_last_of(" \t");
            prefix = sp == npos ? before : before.substr(sp + 1);
            // Longer than any real prefix: keep its tail (bounded search; the report survives).
            if (prefix.size() > kMaxPrefix) prefix = prefix.substr(prefix.size() - kMaxPrefix);
        }
        open(std::move(e), line, std::string(prefix));
        return true;
    }

    /// The text after the report's prefix, or nullopt when the line does not carry it.
    std::optional<string_view> content(string_view t) const {
        if (prefix_.empty()) return t;
        return afterPrefix(t, prefix_);
    }

    /// The text after the first `prefix` in `t` that stands on its own (not the tail of a
    /// longer run of its last character; followed by a blank or the line's end).
    static std::optional<string_view> afterPrefix(string_view t, string_view prefix) {
        for (size_t p = t.find(prefix); p != npos; p = t.find(prefix, p + 1)) {
            size_t q = p + prefix.size();
            bool glued = p > 0 && t[p - 1] == prefix.back();  // part of a longer `=====` run
            if (!glued && (q == t.size() || t[q] == ' ' || t[q] == '\t')) {
                return q < t.size() ? t.substr(q + 1) : string_view();
            }
        }
        return std::nullopt;
    }

    void appendRaw(const LogLine& line) {
        appendRawLine(cur_->raw, line.raw.empty() ? line.text : line.raw);
    }

    void flush(Sink& out) {
        if (cur_) out.evidence(std::move(*cur_));
        cur_.reset();
        foreign_ = 0;
    }
};

}  // namespace

std::unique_ptr<Matcher> makeSanitizerMatcher() {
    return std::make_unique<SanitizerMatcher>();
}

}  // namespace gpufault
