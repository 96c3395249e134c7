#include "collectors/preload/alloc_log.h"

#include <charconv>
#include <cstring>

namespace gpufault::alloclog {

namespace {

bool parseU64(std::string_view v, uint64_t& out) {
    int base = 10;
    if (v.starts_with("0x")) {
        v.remove_prefix(2);
        base = 16;
    }
    if (v.empty()) return false;
    auto r = std::from_chars(v.data(), v.data() + v.size(), out, base);
    return r.ec == std::errc() && r.ptr == v.data() + v.size();
}

bool parseI64(std::string_view v, int64_t& out) {
    if (v.empty()) return false;
    auto r = std::from_chars(v.data(), v.data() + v.size(), out);
    return r.ec == std::errc() && r.ptr == v.data() + v.size();
}

bool knownKind(std::string_view k) {
    static constexpr std::string_view kKinds[] = {
        "start", "alloc", "free", "reserve", "unreserve", "create", "release", "map", "unmap",
        "dropped"};
    for (auto x : kKinds)
        if (x == k) return true;
    return false;
}

/// The family a kind belongs to (its opening kind), for pairing.
std::string_view family(std::string_view kind) {
    if (kind == "free") return "alloc";
    if (kind == "unmap") return "map";
    if (kind == "unreserve") return "reserve";
    return kind;
}

/// "pid/pidns/ticks" of a process (0 for what is not known).
std::string imageKey(int64_t pid, std::optional<uint64_t> ns, std::optional<int64_t> ticks) {
    return std::to_string(pid) + '/' + std::to_string(ns.value_or(0)) + '/' +
           std::to_string(ticks.value_or(0));
}

/// `owner` is "pid/pidns" (Parser::imageOf).
std::string openKey(const std::string& owner, std::string_view fam, uint64_t ptr) {
    std::string k = owner;
    k += '/';
    k += fam;
    k += '/';
    k += std::to_string(ptr);
    return k;
}

std::string unmatchedText(std::string_view kind, uint64_t ptr) {
    char hex[24];
    auto r = std::to_chars(hex, hex + sizeof hex, ptr, 16);
    return std::string(kind) + " of 0x" + std::string(hex, r.ptr) +
           " with no open allocation in this file";
}

}  // namespace

int64_t pidOfFileName(std::string_view name, std::optional<uint64_t>& pidns) {
    constexpr int64_t kPidMax = 1 << 22;  // PID_MAX_LIMIT
    auto decimal = [](std::string_view digits, int64_t& out) {
        auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
        return ec == std::errc() && p == digits.data() + digits.size() && !digits.empty() &&
               digits[0] != '0';
    };
    pidns.reset();
    constexpr std::string_view kPre = "gpufault-alloc.", kSuf = ".log";
    if (!name.starts_with(kPre) || !name.ends_with(kSuf) ||
        name.size() < kPre.size() + kSuf.size())
        return 0;
    auto rest = name.substr(kPre.size(), name.size() - kPre.size() - kSuf.size());
    auto dot = rest.find('.');
    int64_t pid = 0, other = 0;
    if (!decimal(rest.substr(0, dot), pid) || pid < 1 || pid > kPidMax) return 0;
    if (dot == std::string_view::npos) return pid;
    rest.remove_prefix(dot + 1);
    dot = rest.find('.');
    int64_t ticks = 0;
    if (dot == std::string_view::npos || !decimal(rest.substr(0, dot), other) ||
        !decimal(rest.substr(dot + 1), ticks))
        return 0;
    pidns = static_cast<uint64_t>(other);
    return pid;
}

bool looksLikeAllocLog(std::string_view head) {
    return head.starts_with(kPrefix);
}

std::optional<Event> parseLine(std::string_view line, std::string& error) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (auto nul = line.find('\0'); nul != std::string_view::npos) {
        error = "NUL byte at column " + std::to_string(nul + 1) + ": record refused";
        return std::nullopt;
    }
    if (!line.starts_with(kPrefix)) {
        error = "not a gpufault.alloc record";
        return std::nullopt;
    }
    line.remove_prefix(kPrefix.size());
    auto sp = line.find(' ');
    std::string_view version = line.substr(0, sp);
    if (version != "1") {
        error = "unsupported record version '" + std::string(version) + "' (this build reads 1)";
        return std::nullopt;
    }
    line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
    sp = line.find(' ');
    Event e;
    e.kind = std::string(line.substr(0, sp));
    if (!knownKind(e.kind)) {
        error = "unknown record kind '" + e.kind + "'";
        return std::nullopt;
    }
    line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
    bool havePtr = false, haveSize = false;
    std::vector<std::string_view> seen;  // keys so far: a repeated key refuses the line
    while (!line.empty()) {
        auto eq = line.find('=');
        if (eq == std::string_view::npos) {
            error = "field without '=': '" + std::string(line.substr(0, line.find(' '))) + "'";
            return std::nullopt;
        }
        std::string_view key = line.substr(0, eq);
        std::string_view rest = line.substr(eq + 1);
        for (auto k : seen)
            if (k == key) {
                error = "repeated key '" + std::string(key) + "': record refused";
                return std::nullopt;
            }
        seen.push_back(key);
        if (key == "exe") {  // the last field: the rest of the line
            e.exe = std::string(rest);
            break;
        }
        auto end = rest.find(' ');
        std::string_view val = rest.substr(0, end);
        line = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        auto bad = [&] {
            error = "bad value for " + std::string(key) + ": '" + std::string(val) + "'";
            return std::nullopt;
        };
        uint64_t u = 0;
        int64_t i = 0;
        if (key == "api") {
            e.api = std::string(val);
        } else if (key == "boot") {
            bool ok = !val.empty() && val.size() <= 64;
            for (char c : val)
                ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-');
            if (!ok) return bad();
            e.boot = std::string(val);
        } else if (key == "start_ticks") {
            if (!parseI64(val, i) || i < 0) return bad();
            e.start_ticks = i;
        } else if (key == "pidns") {
            if (!parseU64(val, u) || u == 0) return bad();
            e.pidns = u;
        } else if (key == "mem") {
            e.mem = std::string(val);
        } else if (key == "stack") {
            if (val != "-") e.stack = std::string(val);
        } else if (key == "count") {
            if (!parseU64(val, u)) return bad();
            e.count = u;
        } else if (key == "ptr" || key == "size" || key == "handle") {
            if (!parseU64(val, u)) return bad();
            if (key == "ptr")
                e.ptr = u, havePtr = true;
            else if (key == "size")
                e.size = u, haveSize = true;
            else
                e.handle = u;
        } else if (key == "device" || key == "rc" || key == "wall_us" || key == "mono_us" ||
                   key == "pid" || key == "ppid" || key == "tid") {
            if (!parseI64(val, i)) return bad();
            if (key == "device")
                e.device = i < 0 ? std::nullopt : std::optional<int64_t>(i);
            else if (key == "rc")
                e.rc = i;
            else if (key == "wall_us")
                e.wall_us = i;
            else if (key == "mono_us")
                e.mono_us = i;
            else if (key == "pid")
                e.pid = i;
            else if (key == "ppid")
                e.ppid = i;
            else
                e.tid = i;
        }  // other keys: later versions' extras, ignored
    }
    if (!e.pid) {
        error = "record without pid";
        return std::nullopt;
    }
    if (e.kind == "dropped") {
        if (!e.count) {
            error = "dropped record without count";
            return std::nullopt;
        }
        // The shim writes one after it missed at least one call; more than 2^48 calls cannot
        // have been made (a forged or damaged record).
        if (*e.count == 0 || *e.count > (uint64_t{1} << 48)) {
            error = "dropped record with count " + std::to_string(*e.count) + ": refused";
            return std::nullopt;
        }
        return e;
    }
    if (e.kind != "start" && e.kind != "release" && e.kind != "create" && (!havePtr || !haveSize)) {
        error = e.kind + " record without ptr and size";
        return std::nullopt;
    }
    return e;
}

void Parser::feed(uint64_t line_no, std::string_view line) {
    ++log_.lines;
    if (line.empty() || line == "\r") return;
    std::string err;
    auto e = parseLine(line, err);
    if (!e) {
        log_.warnings.push_back({line_no, err});
        return;
    }
    e->line = line_no;
    ++log_.events;
    if (e->kind == "start") {
        log_.processes.push_back({line_no,
                                  *e->pid,
                                  e->ppid,
                                  e->wall_us,
                                  e->mono_us,
                                  e->exe,
                                  e->boot,
                                  e->start_ticks,
                                  e->pidns});
        // A new process of this pid (or a new image of it after an exec) in the same pid
        // namespace: the old one's allocations can no longer be freed. A process of another
        // namespace (a container's pid 1 beside another's) runs beside it: its stay open.
        std::string prefix = std::to_string(*e->pid) + "/";
        auto gone = [&](const auto& kv) {
            return e->pidns ? kv.first.starts_with(prefix + std::to_string(*e->pidns) + "/") ||
                                  kv.first.starts_with(prefix + "0/")
                            : kv.first.starts_with(prefix);
        };
        std::erase_if(open_, gone);
        std::erase_if(handleDevice_, gone);
        started_[*e->pid] = Started{line_no, e->pidns, e->start_ticks};
        imageStart_[imageKey(*e->pid, e->pidns, e->start_ticks)] = line_no;
        return;
    }
    if (e->kind == "dropped") {  // the shim could not record some calls (docs/preload.md)
        log_.dropped = log_.dropped > UINT64_MAX - *e->count ? UINT64_MAX : log_.dropped + *e->count;
        log_.warnings.push_back(
            {line_no,
             std::to_string(*e->count) + " call(s) of pid " + std::to_string(*e->pid) +
                 " not recorded (made in a signal handler while the shim held a lock): the "
                 "recording is incomplete, a block whose free was not recorded stays live"});
        return;
    }
    uint64_t start = 0;
    std::string owner, imageError;
    if (!imageOf(*e, start, owner, imageError)) {
        log_.warnings.push_back({line_no, imageError});
        return;
    }
    if (e->rc.value_or(0) != 0) {
        ++log_.failed;
        return;
    }
    if (e->kind == "create" || e->kind == "release") {
        ++log_.handles;
        if (e->kind == "create" && e->handle && e->device)
            handleDevice_[openKey(owner, "handle", *e->handle)] = *e->device;
        return;
    }
    std::string_view fam = family(e->kind);
    std::string key = openKey(owner, fam, e->ptr);
    if (fam == e->kind) {  // alloc, map, reserve
        if (e->ptr == 0) {
            ++log_.null_allocations;
            log_.warnings.push_back(
                {line_no, e->kind + " record with ptr=0 and rc=0: no allocation stored"});
            return;
        }
        Allocation a;
        a.line = line_no;
        a.pid = *e->pid;
        a.tid = e->tid;
        a.device = e->device;
        a.wall_us = e->wall_us;
        a.mono_us = e->mono_us;
        a.kind = e->kind;
        a.api = e->api;
        a.mem = e->mem;
        a.ptr = e->ptr;
        a.end = e->ptr + e->size;
        if (a.end < a.ptr) {
            // [ptr, 2^64) is a range, but its end has no 64-bit value: refused like a wrap
            log_.warnings.push_back({line_no,
                                     a.end == 0 ? "ptr + size = 2^64: the end is not a 64-bit "
                                                  "address (the store keeps [ptr, end) in 64 "
                                                  "bits): not stored"
                                                : "ptr + size wraps around 2^64: not stored"});
            return;
        }
        a.handle = e->handle;
        if (!a.device && a.handle)
            if (auto h = handleDevice_.find(openKey(owner, "handle", *a.handle));
                h != handleDevice_.end())
                a.device = h->second;
        a.stack = e->stack;
        a.start_line = start;
        // a pointer handed out again replaces the old
        open_[key] = Open{base_ + log_.allocations.size(), line_no};
        log_.allocations.push_back(std::move(a));
        return;
    }
    if (e->ptr == 0) return;  // hipFree(nullptr) and the like: a no-op
    auto it = open_.find(key);
    if (it == open_.end()) {
        // Perhaps an allocation of an earlier generation of the file, or of another copy of
        // the recording: the store looks for it (the warning is dropped when found).
        ++log_.unmatched_frees;
        log_.warnings.push_back({line_no, unmatchedText(e->kind, e->ptr)});
        log_.late_frees.push_back(
            {0, *e->pid, start, std::string(fam), e->ptr, line_no, e->api, e->wall_us, e->mono_us});
        return;
    }
    if (it->second.index < base_) {  // handed out before the last drain
        log_.late_frees.push_back({it->second.line,
                                   *e->pid,
                                   start,
                                   std::string(fam),
                                   e->ptr,
                                   line_no,
                                   e->api,
                                   e->wall_us,
                                   e->mono_us});
        open_.erase(it);
        return;
    }
    Allocation& a = log_.allocations[it->second.index - base_];
    a.free_line = line_no;
    a.free_api = e->api;
    a.freed_wall_us = e->wall_us;
    a.freed_mono_us = e->mono_us;
    open_.erase(it);
}

bool Parser::imageOf(const Event& e, uint64_t& start, std::string& owner, std::string& error) {
    auto s = started_.find(*e.pid);
    std::optional<uint64_t> ns = e.pidns;
    if (s == started_.end()) {  // records before any `start` of the pid (a file cut short)
        owner = std::to_string(*e.pid) + '/' + std::to_string(ns.value_or(0));
        return true;
    }
    const Started& st = s->second;
    bool same = (!e.pidns || !st.pidns || *e.pidns == *st.pidns) &&
                (!e.start_ticks || !st.ticks || *e.start_ticks == *st.ticks);
    start = st.line;
    if (!ns) ns = st.pidns;
    if (!same) {
        // Two processes of one pid number write one file (containers with pid namespaces of
        // their own, shims that named files by pid alone): the record goes to its own
        // process's `start`, never to the other's.
        auto other = imageStart_.find(imageKey(*e.pid, e.pidns ? e.pidns : st.pidns,
                                               e.start_ticks ? e.start_ticks : st.ticks));
        auto describe = [](std::optional<uint64_t> n, std::optional<int64_t> t) {
            return "pid namespace " + (n ? std::to_string(*n) : std::string("?")) +
                   ", start ticks " + (t ? std::to_string(*t) : std::string("?"));
        };
        if (other == imageStart_.end()) {
            error = "record of pid " + std::to_string(*e.pid) + " (" +
                    describe(e.pidns, e.start_ticks) + ") is not of the process of its last " +
                    "start record (line " + std::to_string(st.line) + ", " +
                    describe(st.pidns, st.ticks) + "), and that process wrote none before it: " +
                    "refused";
            return false;
        }
        start = other->second;
        if (!interleaveWarned_) {
            interleaveWarned_ = true;
            log_.warnings.push_back(
                {e.line,
                 "records of two processes of pid " + std::to_string(*e.pid) +
                     " interleave in this file (" + describe(e.pidns, e.start_ticks) + "; " +
                     describe(st.pidns, st.ticks) +
                     "): each record is given to its own process's start record"});
        }
    }
    owner = std::to_string(*e.pid) + '/' + std::to_string(ns.value_or(0));
    return true;
}

void Parser::truncated(uint64_t line_no) {
    log_.warnings.push_back({line_no, "record cut short (no newline at the end of the file)"});
}

void Parser::skipped(uint64_t line_no, std::string message) {
    ++log_.lines;
    log_.warnings.push_back({line_no, std::move(message)});
}

Log Parser::finish() && {
    return std::move(log_);
}

Log Parser::drain() {
    Log out = std::move(log_);
    log_ = Log{};
    base_ += out.allocations.size();
    return out;
}

Log parse(std::string_view text) {
    Parser p;
    uint64_t n = 0;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        ++n;
        if (nl == std::string_view::npos) {
            p.truncated(n);
            break;
        }
        if (nl - pos > kMaxLine)
            p.skipped(n, std::string(kLongLine));
        else
            p.feed(n, text.substr(pos, nl - pos));
        pos = nl + 1;
    }
    return std::move(p).finish();
}

}  // namespace gpufault::alloclog
