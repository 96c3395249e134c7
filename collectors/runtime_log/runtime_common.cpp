#include "collectors/runtime_log/runtime_common.h"

#include <algorithm>

#include "collectors/common/text.h"
#include "collectors/runtime_log/amd_log_prefix.h"

namespace gpufault::rt {

namespace {

constexpr size_t kPrefixSearch = 512;

AmdFields fromPrefix(std::string_view s, const AmdLogPrefix& p) {
    AmdFields f;
    f.present = true;
    f.pid = p.pid;
    f.runtime_tid = p.runtime_tid;
    f.runtime_us = p.runtime_us;
    f.message = s.substr(p.message_offset);
    return f;
}

/// False when both records name the binary they are about (HIP's NoBinaryForGpu `for file:`
/// or `for ptr:`) and the names differ; a record that names none (the `guarantee()` abort of
/// the same failure) may fold with one that does.
bool sameBinary(const Evidence& a, const Evidence& b) {
    auto fa = a.attr("file"), fb = b.attr("file"), pa = a.attr("ptr"), pb = b.attr("ptr");
    if (!(fa || pa) || !(fb || pb)) return true;
    return fa == fb && pa == pb;
}

bool sameKey(const Evidence& a, const Evidence& b) {
    return a.kind == b.kind && a.reason == b.reason && a.pid == b.pid && a.rank == b.rank &&
           a.vendor == b.vendor && a.kernel == b.kernel && a.attr("target") == b.attr("target") &&
           sameBinary(a, b) &&
           (a.reason ||
            (a.attr("code") == b.attr("code") && a.attr("message") == b.attr("message")));
}

}  // namespace

AmdFields amdFieldsParsed(const LogLine& l) {
    // Only a line that starts like `:N:` (or `N:` with the colon lost) can carry the prefix.
    std::string_view t = text::trimLeft(l.text);
    if (t.size() > 2 && (t[0] == ':' || (t[0] >= '0' && t[0] <= '9' && t[1] == ':'))) {
        if (auto p = parseAmdLogPrefix(l.text)) return fromPrefix(l.text, *p);
    }
    AmdFields f;
    f.message = l.text;
    return f;
}

AmdFields amdFieldsAnywhere(const LogLine& l) {
    AmdFields f = amdFieldsAtStart(l);
    if (f.present) return f;
    std::string_view t = l.text.substr(0, std::min(l.text.size(), kPrefixSearch));
    for (size_t i = t.find(':', 1); i != std::string_view::npos; i = t.find(':', i + 1)) {
        if (i + 2 >= t.size() || t[i + 1] < '0' || t[i + 1] > '9' || t[i + 2] != ':') continue;
        std::string_view rest = l.text.substr(i);
        if (auto p = parseAmdLogPrefix(rest); p && p->runtime_us) return fromPrefix(rest, *p);
    }
    return f;
}

std::optional<int64_t> rankOf(const LogLine& l) {
    if (l.rank) return l.rank;
    // `[rankN]:`, NCCL's `[PG ID 0 PG GUID 0(default_pg) Rank 2]` and its older `[Rank 0]`
    for (std::string_view key :
         {std::string_view("[rank"), std::string_view(" Rank "), std::string_view("[Rank ")}) {
        size_t i = l.text.find(key);
        if (i == std::string_view::npos) continue;
        size_t n = 0;
        auto v = text::parseDec(l.text.substr(i + key.size()), &n);
        if (!v || *v < 0) continue;
        size_t end = i + key.size() + n;
        if (key[0] == '[' && l.text.substr(end, 2) == "]:") return v;
        if (key[0] == ' ' && l.text.substr(end, 1) == "]") return v;
        if (key[1] == 'R' && l.text.substr(end, 1) == "]") return v;
    }
    return std::nullopt;
}

Evidence baseEvidence(Kind kind, const LogLine& l, const AmdFields& amd, const char* vendor) {
    Evidence e;
    e.kind = kind;
    if (vendor) e.vendor = vendor;
    e.line = l.line;
    e.time = l.time;
    if (!e.time.runtime_us && amd.runtime_us) e.time.runtime_us = amd.runtime_us;
    e.rank = rankOf(l);
    e.raw = std::string(l.raw.substr(0, std::min(l.raw.size(), kMaxRaw)));
    if (amd.present) {
        e.pid = amd.pid;
        if (!amd.runtime_tid.empty()) e.runtime_tid = std::string(amd.runtime_tid);
    }
    // A journald/syslog `ident[PID]:` (or an entry's _PID) of a program line: the pid of the
    // process that opened the journal stream on the journal's host, kept as the `journal_pid`
    // attr for joins (correlate/links.h), never as the record's `pid`: the producer did not blame
    // it, and under a launcher (torchrun, a service's workers) it is the launcher's, which would
    // keep the fault from its worker's operands and dispatches (docs/evidence.md).
    if (l.ident_pid && l.origin == Origin::Other)
        e.setAttr("journal_pid", std::to_string(*l.ident_pid));
    return e;
}

void appendRaw(std::string& raw, std::string_view more) {
    appendRawLine(raw, more);
}

Evidence* Folder::add(Evidence&& e, Sink& out) {
    for (size_t i = 0; i < held_.size(); ++i) {
        if (sameKey(held_[i], e) && !barrierBetween(held_[i], e.line)) {
            ++held_[i].count;
            last_[i] = std::max(last_[i], e.line);
            return &held_[i];
        }
    }
    held_.reserve(kMax);  // pointers handed out stay valid
    if (held_.size() >= kMax) {
        out.evidence(std::move(e));
        return nullptr;
    }
    last_.push_back(e.line);
    held_.push_back(std::move(e));
    out.context(held_.back());  // its dispatch window: what precedes its line now
    return &held_.back();
}

void Folder::flush(Sink& out) {
    std::stable_sort(held_.begin(), held_.end(), [](const Evidence& a, const Evidence& b) {
        return a.line < b.line;
    });
    for (auto& e : held_) out.evidence(std::move(e));
    held_.clear();
    last_.clear();
}

void Folder::publish(Sink& out) const {
    std::vector<const Evidence*> order;
    for (const auto& e : held_) order.push_back(&e);
    std::stable_sort(order.begin(), order.end(), [](const Evidence* a, const Evidence* b) {
        return a->line < b->line;
    });
    for (const Evidence* e : order) out.evidence(Evidence(*e));
}

namespace {

/// Same value, or either side states none.
bool mayBeSame(const std::optional<int64_t>& a, const std::optional<int64_t>& b) {
    return !a || !b || *a == *b;
}

}  // namespace

template <typename Close>
void Folder::closeWhere(uint64_t now, Close&& close, Sink& out) {
    std::vector<size_t> early;
    for (size_t i = 0; i < held_.size(); ++i)
        if (close(i)) early.push_back(i);
    if (early.empty()) return;
    std::stable_sort(early.begin(), early.end(), [this](size_t a, size_t b) {
        return held_[a].line < held_[b].line;
    });
    // Forget closed folds whose repeats are behind every line a stream can resume at (the
    // 65 536 line positions a checkpoint remembers).
    std::erase_if(closed_, [now](const Closed& c) { return c.last + 4 * kFoldLines < now; });
    std::vector<bool> gone(held_.size());
    for (size_t i : early) {
        if (last_[i] > held_[i].line) closed_.push_back({held_[i].line, last_[i]});
        out.evidence(std::move(held_[i]));
        gone[i] = true;
    }
    size_t kept = 0;
    for (size_t i = 0; i < held_.size(); ++i) {
        if (gone[i]) continue;
        if (kept != i) {
            held_[kept] = std::move(held_[i]);
            last_[kept] = last_[i];
        }
        ++kept;
    }
    held_.resize(kept);
    last_.resize(kept);
}

void Folder::closeBefore(uint64_t before, Sink& out) {
    closeWhere(
        before, [&](size_t i) { return held_[i].line < before; }, out);
}

void Folder::closeProcess(uint64_t at,
                          std::optional<int64_t> pid,
                          std::optional<int64_t> rank,
                          Sink& out) {
    closeWhere(
        at,
        [&](size_t i) {
            const Evidence& h = held_[i];
            return h.line < at && mayBeSame(h.pid, pid) && mayBeSame(h.rank, rank);
        },
        out);
    // A record held back by its matcher (a line waiting for the next one) is at most a few
    // lines before `at`; a held one at most kFoldLines.
    std::erase_if(barriers_, [at](const Barrier& b) { return b.line + 2 * kFoldLines < at; });
    if (barriers_.size() >= kMaxBarriers) barriers_.erase(barriers_.begin());
    barriers_.push_back({at, pid, rank});
}

bool Folder::barrierBetween(const Evidence& h, uint64_t line) const {
    for (const Barrier& b : barriers_)
        if (h.line < b.line && b.line < line && mayBeSame(h.pid, b.pid) &&
            mayBeSame(h.rank, b.rank))
            return true;
    return false;
}

std::optional<uint64_t> Folder::closedAround(uint64_t line) const {
    std::optional<uint64_t> first;
    for (const Closed& c : closed_)
        if (c.first < line && line <= c.last && (!first || c.first < *first)) first = c.first;
    return first;
}

std::optional<uint64_t> Folder::firstLine() const {
    std::optional<uint64_t> first;
    for (auto& e : held_)
        if (!first || e.line < *first) first = e.line;
    return first;
}

bool isIdentChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string_view identAt(std::string_view s, size_t i) {
    size_t j = i;
    while (j < s.size() && isIdentChar(s[j])) ++j;
    return s.substr(i, j - i);
}

}  // namespace gpufault::rt
