// journald `short*` and rsyslog prefixes (systemd logs-show.c, rsyslog rsconf.c templates,
// RFC 3164/5424), FORMATS.md §9.3.
#include "collectors/prefix/kernel_stamp.h"
#include "collectors/prefix/scan.h"
#include "collectors/prefix/timestamp.h"

namespace gpufault::prefix {

namespace {

/// A run of non-space bytes (at most `max`), or "".
std::string_view token(Cursor& c, size_t max = 255) {
    size_t start = c.i;
    while (!c.done() && c.peek() != ' ' && c.peek() != '\t' && c.i - start < max) ++c.i;
    return c.s.substr(start, c.i - start);
}

/// `IDENT[PID]: ` (or `IDENT: `, or the `:` at the end of the line).
bool identTag(Cursor& c, KernelPrefix& p) {
    Cursor t = c;
    size_t start = t.i;
    while (!t.done() && t.peek() != ' ' && t.peek() != '\t' && t.peek() != '[' && t.peek() != ':' &&
           t.i - start < 128)
        ++t.i;
    if (t.i == start) return false;
    std::string_view ident = t.s.substr(start, t.i - start);
    std::optional<int64_t> pid;
    if (t.eat('[')) {
        int64_t v = 0;
        if (!t.number(v, 1, 10) || !t.eat(']')) return false;
        pid = v;
    }
    if (!t.eat(':') || !(t.eat(' ') || t.done())) return false;
    p.ident = ident;
    p.ident_pid = pid;
    p.origin = ident == "kernel" ? Origin::Kernel : Origin::Other;
    c = t;
    return true;
}

/// The messages the kernel prints as `COMM[PID]: …` about a user task (FORMATS.md §9.1:
/// x86 `segfault at `, arm64 `unhandled exception: `).
bool isKernelTaskMessage(std::string_view rest) {
    return rest.starts_with("segfault at ") || rest.starts_with("unhandled exception: ");
}

/// `HH:MM:SS` with an optional `.ffffff`; `frac` gets the fraction's digits ("" without one).
bool clock(Cursor& c, CivilTime& t, std::string_view& frac) {
    Cursor u = c;
    if ((t.hour = u.fixed(2)) < 0 || !u.eat(':') || (t.minute = u.fixed(2)) < 0 || !u.eat(':') ||
        (t.second = u.fixed(2)) < 0)
        return false;
    frac = {};
    if (u.peek() == '.' && isDigit(u.peek(1))) {
        size_t start = ++u.i;
        while (isDigit(u.peek()) && !u.done()) ++u.i;
        frac = u.s.substr(start, u.i - start);
    }
    c = u;
    return true;
}

/// RFC 3164 / journald `short`: `Sep  9 02:30:28`, `Sep 09 02:30:28.123456`, `nov 04 …`. The
/// wall time has no year; journald `short-precise` keeps its fraction (`09-09T02:30:28.123456`,
/// at most 9 digits): with no year there is no instant for the store to carry it instead.
bool traditionalStamp(Cursor& c, KernelPrefix& p) {
    Cursor t = c;
    auto month = token(t, 16);
    if (month.empty() || isDigit(month[0]) || t.spaces() == 0 || t.i - c.i - month.size() > 2)
        return false;
    CivilTime ct;
    int64_t day = 0;
    std::string_view frac;
    if (!t.number(day, 1, 2) || day < 1 || day > 31 || !t.eat(' ') || !clock(t, ct, frac))
        return false;
    ct.day = static_cast<int>(day);
    ct.month = monthFromName(month);
    p.wall = formatWall(ct);
    if (p.wall && !frac.empty() && frac.size() <= 9) *p.wall += "." + std::string(frac);
    if (!p.wall && ct.month != 0) p.wall_refused = WallRefusal::Date;  // `Feb 30`, `25:00:00`
    c = t;
    return true;
}

/// journald `short-full`: `Tue 2025-09-09 02:30:28 CEST`.
bool fullStamp(Cursor& c, KernelPrefix& p) {
    Cursor t = c;
    if (token(t, 16).empty() || !t.eat(' ')) return false;
    auto st = scanIsoStamp(t.rest(), true);
    if (!st || st->sep != ' ' || st->zone) return false;
    t.i += st->len;
    if (!t.eat(' ') || token(t, 32).empty()) return false;
    p.wall = stampWall(*st);
    p.wall_refused = stampRefusal(*st);
    c = t;
    return true;
}

/// RFC 3339 (rsyslog FileFormat, journald short-iso[-precise]) or journald `short-unix`.
bool numericStamp(Cursor& c, KernelPrefix& p) {
    if (auto st = scanIsoStamp(c.rest())) {
        // Go RFC3339Nano (Docker, CRI) prints 7–9 digits; syslog/journald at most 6.
        if (st->sep != 'T' || !st->zone || st->frac_digits > 6 || st->frac_sep == ',') return false;
        p.wall = stampWall(*st);
        p.wall_utc_s = zonedEpoch(*st);
        p.wall_refused = stampRefusal(*st);
        c.i += st->len;
        return true;
    }
    Cursor t = c;
    int64_t secs = 0, us = 0;
    if (!t.number(secs, 9, 11) || !t.eat('.') || !t.number(us, 6, 6)) return false;
    p.wall = formatWall(civilFromEpoch(secs));
    p.wall_utc_s = secs;
    c = t;
    return true;
}

/// RFC 5424 after `<PRI>1 `: `TIMESTAMP HOST APP-NAME PROCID MSGID STRUCTURED-DATA MSG`.
bool rfc5424(Cursor& c, KernelPrefix& p) {
    Cursor t = c;
    if (!t.eat('-') && !numericStamp(t, p)) return false;
    std::string_view f[4];  // host, app, procid, msgid
    for (auto& x : f)
        if (!t.eat(' ') || (x = token(t)).empty()) return false;
    if (!t.eat(' ')) return false;
    if (!t.eat('-')) {
        if (t.peek() != '[') return false;
        while (t.peek() == '[') {  // SD-ELEMENTs; `]` inside PARAM-VALUE is escaped as `\]`
            ++t.i;
            while (!t.done() && t.peek() != ']') t.i += t.peek() == '\\' ? 2 : 1;
            if (!t.eat(']')) return false;
        }
    }
    if (!(t.eat(' ') || t.done())) return false;
    t.eat("\xEF\xBB\xBF");  // MSG = [BOM] UTF-8 text (RFC 5424 §6.4)
    p.ident = f[1] == "-" ? std::string_view{} : f[1];
    p.origin = f[1] == "kernel" ? Origin::Kernel : Origin::Other;
    Cursor pid{f[2]};
    int64_t v = 0;
    if (pid.number(v, 1, 10) && pid.done()) p.ident_pid = v;
    c = t;
    return true;
}

/// `[<PRI>]STAMP [HOST ]IDENT[PID]: ` (all forms but the bare `kernel: ` tag).
bool stampedHeader(Cursor& c, KernelPrefix& p) {
    if (c.eat('<')) {  // forwarded syslog `<PRI>`
        int64_t pri = 0;
        if (!c.number(pri, 1, 3) || !c.eat('>')) return false;
        if (c.eat("1 ")) return rfc5424(c, p);
    }
    bool mono = c.peek() == '[';
    if (mono) {  // journalctl short-monotonic / short-delta: receive time since boot
        // Cheap test first: dmesg lines have the same stamp but no `HOST IDENT[PID]: `.
        size_t close = c.s.find("] ", c.i);
        if (close == std::string_view::npos || close - c.i > 48) return false;
        Cursor h{c.s, close + 2};
        KernelPrefix q;
        if (token(h).empty() || !h.eat(' ') || !identTag(h, q) ||
            (q.ident != "kernel" && !q.ident_pid))
            return false;
        // dmesg with a task name of two words (`Web Content`) reads the same: `[  7.1] Web
        // Content[7]: segfault at …`. Only the kernel prints those messages (journald would tag
        // them `kernel: `), so a mono stamp before them is dmesg's (FORMATS.md §9.1).
        if (q.ident != "kernel" && isKernelTaskMessage(h.rest())) return false;
        size_t len = 0;
        p.kernel_s = parsePrintkStamp(c.rest(), &len, true);
        if (!p.kernel_s) return false;
        c.i += len;
    } else if (isDigit(c.peek())) {
        if (!numericStamp(c, p)) return false;
    } else if (!traditionalStamp(c, p) && !fullStamp(c, p)) {
        return false;
    }
    if (c.spaces() == 0) return false;
    // `HOST IDENT[PID]: ` or, with --no-hostname, `IDENT[PID]: `. Without a host only the kernel
    // tag or an `ident[pid]` is believed (a message may start with `Error: `); a mono stamp
    // without a host is dmesg (`[  231.101010] python3[4242]: segfault …`).
    Cursor no_host = c;
    KernelPrefix q = p;
    if (!mono && identTag(no_host, q) && (q.ident == "kernel" || q.ident_pid)) {
        c = no_host;
        p = std::move(q);
        return true;
    }
    auto host = token(c);
    if (host.empty() || host.back() == ':' || !c.eat(' ') || !identTag(c, p)) return false;
    return !mono || p.ident == "kernel" || p.ident_pid;
}

}  // namespace

bool parseSyslogPrefix(std::string_view line, KernelPrefix& out) {
    if (line.empty()) return false;
    char first = line[0];
    if (!(isAlnum(first) || first == '[' || first == '<' || isHighByte(first))) return false;
    Cursor c{line};
    KernelPrefix p;
    // `grep kernel /var/log/…` output without stamp and host: a bare `kernel: ` tag.
    bool bare = first == 'k' && line.starts_with("kernel:") && identTag(c, p);
    if (!bare && !stampedHeader(c, p)) return false;
    if (p.ident == "kernel") {
        size_t len = 0;
        if (auto ks = parsePrintkStamp(c.rest(), &len)) {
            p.kernel_s = ks;
            c.i += len;
            c.eat(' ');
        }
    }
    p.consumed = c.i;
    out = std::move(p);
    return true;
}

}  // namespace gpufault::prefix
