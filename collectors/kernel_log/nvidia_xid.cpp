// NVRM Xid lines (FORMATS.md §6). One line = one record; an Xid 31 line wrapped before its
// `Fault is of type` is held for up to three unstamped continuation lines.
//
// Prefix (open-gpu-kernel-modules kernel_rc.c, all generations):
//   NVRM: Xid (PCI:%04x:%02x:%02x[ GPU-I:%02u[ GPU-CI:%02u]]): %d, pid=%s, name=%s, %s
//   ≤418:     NVRM: Xid (PCI:…): 31, Ch %08x, intr %08x. …          (no pid/name)
//   ~440–545: NVRM: Xid (PCI:…): 31, pid=%s, Ch %08x, intr %08x. …  (no name)
//   ~550+:    NVRM: Xid (PCI:…): 31, pid=%s, name=%s, channel 0x%08x, intr %08x. …
// Xid 31 body: `MMU Fault: ENGINE %s [GPC%d ]%s faulted @ 0x%x_%08x. Fault is of type %s %s`.
#include "collectors/kernel_log/nvidia_xid.h"

#include <fmt/format.h>

#include <cctype>
#include <string>

#include "collectors/common/text.h"
#include "collectors/common/wrapped_line.h"

namespace gpufault {

namespace {

using std::string_view;
constexpr string_view kAnchor = "NVRM: Xid (";

/// Removes `p` from the front of `*s`; false (and `*s` unchanged) when `*s` does not start with it.
bool consume(string_view* s, string_view p) {
    if (!text::startsWith(*s, p)) return false;
    s->remove_prefix(p.size());
    return true;
}

/// A `key=value, ` field at the front of `*s` (value up to the comma). Consumes it and returns the
/// value; nullopt when absent or cut before its comma (a cut value is not trusted).
std::optional<string_view> takeField(string_view* s, string_view key) {
    if (!text::startsWith(*s, key)) return std::nullopt;
    size_t comma = s->find(',', key.size());
    if (comma == string_view::npos) return std::nullopt;
    string_view v = s->substr(key.size(), comma - key.size());
    s->remove_prefix(comma + 1);
    *s = text::trimLeft(*s);
    return v;
}

/// The whitespace-delimited token ending right before position `end` of `s`.
string_view tokenBefore(string_view s, size_t end) {
    string_view head = text::trimRight(s.substr(0, end));
    size_t sp = head.find_last_of(' ');
    return sp == string_view::npos ? head : head.substr(sp + 1);
}

/// `ACCESS_TYPE_[VIRT_|PHYS_]READ|WRITE` → read/write; anything else (ATOMIC, PREFETCH…) → null.
std::optional<std::string> accessOf(string_view type) {
    if (!consume(&type, "ACCESS_TYPE_")) return std::nullopt;
    if (!consume(&type, "VIRT_")) consume(&type, "PHYS_");
    if (type == "READ") return "read";
    if (type == "WRITE") return "write";
    return std::nullopt;
}

/// Fault part of the body (`… faulted @ 0x%x_%08x. Fault is of type %s %s`): address (the
/// 4 KiB page, so not exact), client (token before `faulted`, only for `MMU Fault: ENGINE`
/// bodies), engine, reason (`FAULT_*`) and access. Returns why the address was not taken (a
/// value that is not `0x%x_%08x` of 64 bits), "" when it was or there is none.
std::string parseFault(string_view body, Evidence& e) {
    size_t at = body.find(" faulted @ ");
    if (at == string_view::npos) return "";
    string_view addr = body.substr(at + 11);
    std::string refused;
    size_t used = 0;
    if (text::startsWith(addr, "0x") || text::startsWith(addr, "0X")) {
        // `0x%x_%08x`: the high 32 bits, then the low 32 (zero-padded, so a low part of fewer
        // than 8 digits followed by `.` is still its own 32-bit value: `0x7f_1234800.` is
        // 0x7f01234800; one that ends the line was cut there and is refused)
        auto hi = text::parseHex(addr, &used);
        auto ends = [&](size_t n) {  // the value ends there: `.`, a blank, `,` or the line's end
            return n >= addr.size() || addr[n] == '.' || addr[n] == ' ' || addr[n] == ',';
        };
        if (hi && used < addr.size() && addr[used] == '_') {
            size_t lo_used = 0;
            std::string_view low = addr.substr(used + 1);
            // bare hex digits only (`0x7f_0x1234` is no `%08x`)
            auto lo = low.size() > 1 && (low[1] == 'x' || low[1] == 'X')
                          ? std::nullopt
                          : text::parseHex(low, &lo_used);
            size_t lo_end = used + 1 + lo_used;
            bool cut = lo_used < 8 && lo_end >= addr.size();
            if (lo && lo_used <= 8 && !cut && *hi <= 0xffffffffULL && ends(lo_end)) {
                e.address = (*hi << 32) | *lo;
                e.address_exact = false;
            } else {
                refused = "the fault address is not 0x%x_%08x of 64 bits";
            }
        } else if (hi && ends(used) && used < addr.size()) {  // (at the line's end: cut before `_`)
            e.address = *hi;
            e.address_exact = false;
        } else {
            refused = "the fault address is not a 64-bit hex value";
        }
        if (!refused.empty()) {
            string_view shown = addr.substr(0, std::min<size_t>(addr.find_first_of(" ,"), 64));
            if (!shown.empty() && shown.back() == '.') shown.remove_suffix(1);
            refused = fmt::format("Xid: {} ({}): stored without an address", refused, shown);
        }
    }
    if (auto eng = body.find("MMU Fault: ENGINE "); eng != string_view::npos && eng + 18 <= at) {
        string_view engine = body.substr(eng + 18, at - eng - 18);
        e.client = std::string(tokenBefore(body, at));
        e.setAttr("engine", std::string(engine.substr(0, engine.find(' '))));
    }
    size_t ty = body.find("Fault is of type ", at);
    if (ty == string_view::npos) return refused;
    string_view rest = body.substr(ty + 17);
    size_t sp = rest.find(' ');
    string_view reason = rest.substr(0, sp);
    if (!reason.empty()) e.reason = std::string(reason);
    if (sp == string_view::npos) return refused;
    string_view access = text::trim(rest.substr(sp + 1));
    access = access.substr(0, access.find(' '));
    if (access.empty()) return refused;
    e.access = accessOf(access);
    e.setAttr("access_type", std::string(access));
    return refused;
}

/// Legacy `Ch %08x` / newer `channel 0x%08x`, then `intr %08x`, kept as attrs.
void parseChannel(string_view body, Evidence& e) {
    string_view ch;
    if (consume(&body, "Ch ") || consume(&body, "channel ")) {
        ch = body.substr(0, body.find_first_of(", "));
        body.remove_prefix(ch.size());
        if (!ch.empty()) e.setAttr("channel", std::string(ch));
        body = text::trimLeft(body.substr(text::startsWith(body, ",") ? 1 : 0));
    }
    if (consume(&body, "intr ")) {
        string_view intr = body.substr(0, body.find_first_of(". ,"));
        if (!intr.empty()) e.setAttr("intr", std::string(intr));
    }
}

/// Parses the text after `NVRM: Xid (` into `e` (kind, vendor, pci, xid, pid, process, body
/// fields); false when it is cut before the Xid number (not a record). `refused`: why the
/// address was not taken ("" when it was or there is none).
bool parseXid(string_view s, Evidence& e, std::string& refused) {
    e.kind = Kind::NvidiaXid;
    e.vendor = "nvidia";
    // PCI:%04x:%02x:%02x, then optional MIG instance ids, then "): ".
    size_t close = s.find(')');
    if (close == string_view::npos) return false;  // cut inside the prefix: identifies nothing
    string_view dev = s.substr(0, close);
    string_view pci = dev.substr(0, dev.find(' '));
    e.pci = text::normalizePci(pci);
    if (auto gi = text::after(dev, " GPU-I:", " ")) e.setAttr("gpu_instance", std::string(*gi));
    if (auto ci = text::after(dev, " GPU-CI:", " "))
        e.setAttr("compute_instance", std::string(*ci));
    s.remove_prefix(close + 1);
    if (!consume(&s, ": ")) return false;
    size_t used = 0;
    auto xid = text::parseDec(s, &used);
    if (!xid || *xid < 0) return false;  // cut before the Xid number: not a record
    e.xid = *xid;
    s.remove_prefix(used);
    consume(&s, ",");
    string_view body = text::trimLeft(s);
    if (auto pid = takeField(&body, "pid=")) {  // '<unknown>' (no channel) stays null
        size_t n = 0;
        auto v = text::parseDec(*pid, &n);
        // pid 0 as amdgpu's `pid 0` (no process); above PID_MAX_LIMIT no pid at all
        if (v && *v >= 0 && *v <= (int64_t{1} << 22) && n == pid->size()) e.pid = *v;
    }
    if (auto name = takeField(&body, "name=")) {
        if (!name->empty() && *name != "<unknown>") e.process = std::string(*name);
    }
    if (!body.empty()) e.setAttr("message", std::string(body.substr(0, 512)));
    parseChannel(body, e);
    refused = parseFault(body, e);
    return true;
}

/// Whether the text of an Xid line stops before its MMU fault's `Fault is of type` (it ends
/// with a comma, or names the `MMU Fault` without its type): wrapped by hand or by a mail
/// client, its rest on the next lines.
bool stopsBeforeFaultType(string_view s) {
    if (s.find("Fault is of type ") != string_view::npos) return false;
    s = text::trimRight(s);
    return (!s.empty() && s.back() == ',') || s.find("MMU Fault") != string_view::npos;
}

class NvidiaXidMatcher final : public Matcher {
  public:
    bool kernelLogOnly() const override { return true; }
    void feed(const LogLine& line, Sink& out) override {
        if (wrapped_.holding()) {
            if (mayBeWrappedRest(line)) {  // never an Xid line: mayBeWrappedRest refuses NVRM
                wrapped_.append(text::trim(line.text), line);
                if (wrapped_.rests() < kMaxWrappedRests &&
                    stopsBeforeFaultType(wrapped_.line().text))
                    return;
                return record(wrapped_.release(), out);
            }
            record(wrapped_.release(), out);
        }
        size_t a = line.text.find(kAnchor);
        if (a == string_view::npos) return;
        // An Xid 31 that stops before its fault type waits for its rest (the record, parsed
        // from the joined line, keeps this line's number and stamp).
        string_view s = line.text.substr(a + kAnchor.size());
        size_t used = 0;
        if (auto close = s.find("): "); close != string_view::npos &&
                                        text::parseDec(s.substr(close + 3), &used) == 31 &&
                                        stopsBeforeFaultType(s))
            return wrapped_.hold(line);
        record(line, out);
    }
    void finish(Sink& out) override {
        if (wrapped_.holding()) record(wrapped_.release(), out);
    }
    std::optional<uint64_t> openSince() const override {
        return wrapped_.holding() ? std::optional<uint64_t>(wrapped_.lineNumber()) : std::nullopt;
    }

  private:
    /// The record of an Xid line (nothing when it is cut before its number), with the warning
    /// of an address not taken.
    static void record(const LogLine& line, Sink& out) {
        size_t a = line.text.find(kAnchor);
        if (a == string_view::npos) return;
        Evidence e;
        std::string refused;
        if (!parseXid(line.text.substr(a + kAnchor.size()), e, refused)) return;
        stampFromLine(e, line);
        if (!refused.empty()) out.warning({line.line, std::move(refused)});
        out.evidence(std::move(e));
    }

    WrappedLine wrapped_;  ///< an Xid 31 line waiting for its wrapped rest
};

}  // namespace

std::unique_ptr<Matcher> makeNvidiaXidMatcher() {
    return std::make_unique<NvidiaXidMatcher>();
}

}  // namespace gpufault
