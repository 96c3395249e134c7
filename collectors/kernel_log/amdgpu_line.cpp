#include "collectors/kernel_log/amdgpu_line.h"

#include <cstring>

#include "collectors/common/log_line.h"
#include "collectors/common/text.h"

namespace gpufault::amdgpu {

namespace {

bool isWordChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// `after` is the text behind the device's `: `; strips the dev_fmt tag and the indentation.
DeviceLine makeLine(std::string key, std::optional<std::string> pci, std::string_view after) {
    DeviceLine d;
    d.key = std::move(key);
    d.pci = std::move(pci);
    if (text::startsWith(after, "amdgpu:")) {
        d.tagged = true;
        after.remove_prefix(7);
    }
    d.body = text::trimRight(skipBlanks(after));
    return d;
}

// The part behind `NAME:` up to the first `: `, or empty when the line ends with `NAME:`.
// nullopt when neither follows, or when NAME would be longer than `max_name`: the search stops
// there, so that trying every `amdgpu ` of a long line stays linear.
std::optional<std::pair<std::string_view, std::string_view>> splitAtColon(std::string_view s,
                                                                          size_t max_name) {
    size_t c = s.substr(0, max_name + 2).find(": ");
    if (c != std::string_view::npos) return std::pair{s.substr(0, c), s.substr(c + 2)};
    if (!s.empty() && s.size() <= max_name + 1 && s.back() == ':')
        return std::pair{s.substr(0, s.size() - 1), s.substr(s.size())};
    return std::nullopt;
}

}  // namespace

bool mentionsAmdgpu(std::string_view text) {
    // Each anchor has an 'm' near its start: look only around the 'm's.
    if (text.empty()) return false;  // data() may be null
    const char* b = text.data();
    const char* e = b + text.size();
    for (const char* p = b;
         (p = static_cast<const char*>(std::memchr(p, 'm', static_cast<size_t>(e - p))));
         ++p) {
        size_t i = static_cast<size_t>(p - b);
        if (i >= 1 && text.substr(i - 1, 6) == "amdgpu") return true;
        if (i >= 2 && text.substr(i - 2, 4) == "drmn") return true;
        if (i >= 1 && text.substr(i - 1, 4) == "gmc_") return true;
    }
    return mentionsRadeon(text);
}

bool mentionsRadeon(std::string_view text) {
    // anchored on its 'd', a rarer byte than its first ('r'): one memchr a candidate
    if (text.size() < 7) return false;
    const char* b = text.data();
    const char* e = b + text.size();
    for (const char* p = b + 2;
         p < e && (p = static_cast<const char*>(std::memchr(p, 'd', static_cast<size_t>(e - p))));
         ++p)
        if (e - p >= 5 && std::memcmp(p - 2, "radeon ", 7) == 0) return true;
    return false;
}

std::string_view skipBlanks(std::string_view s) {
    for (;;) {
        if (!s.empty() && (s[0] == ' ' || s[0] == '\t')) {
            s.remove_prefix(1);
        } else if (text::startsWith(s, "\\x09")) {
            s.remove_prefix(4);
        } else {
            return s;
        }
    }
}

std::optional<DeviceLine> splitDeviceLine(std::string_view text) {
    for (std::string_view driver : {std::string_view("amdgpu "), std::string_view("radeon ")}) {
        for (size_t p = text.find(driver); p != std::string_view::npos;
             p = text.find(driver, p + 1)) {
            if (p > 0 && isWordChar(text[p - 1])) continue;
            auto parts = splitAtColon(text.substr(p + driver.size()), 12);
            if (!parts || parts->first.size() != 12) continue;  // DDDD:BB:DD.F
            auto pci = text::normalizePci(parts->first);
            if (!pci) continue;
            std::string key = *pci;
            DeviceLine d = makeLine(std::move(key), std::move(pci), parts->second);
            d.radeon = driver[0] == 'r';
            return d;
        }
    }
    // FreeBSD drm-kmod: `drmn0: ` instead of the BDF.
    for (size_t p = text.find("drmn"); p != std::string_view::npos; p = text.find("drmn", p + 1)) {
        if (p > 0 && isWordChar(text[p - 1])) continue;
        size_t e = p + 4;
        while (e < text.size() && text[e] >= '0' && text[e] <= '9') ++e;
        if (e == p + 4) continue;
        auto parts = splitAtColon(text.substr(e), 0);
        if (!parts || !parts->first.empty()) continue;
        return makeLine(std::string(text.substr(p, e - p)), std::nullopt, parts->second);
    }
    return std::nullopt;
}

std::optional<int64_t> decFollowedBy(std::string_view s, std::string_view ends, bool at_end_ok) {
    size_t used = 0;
    auto v = text::parseDec(s, &used);
    if (!v || s[0] == '-') return std::nullopt;
    if (used == s.size()) return at_end_ok ? v : std::nullopt;
    return ends.find(s[used]) != std::string_view::npos ? v : std::nullopt;
}

namespace {

/// Bytes of a task name the kernel can print: TASK_COMM_LEN (16) less its NUL
/// (amdgpu_task_info's process_name and task_name).
constexpr size_t kCommMax = 15;

/// The task part split at the ` pid N` that starts at `q`: the process name before it, the
/// thread part after ` thread ` up to the line's last ` pid M`. `fits` when both names are
/// within kCommMax bytes (or the line is cut before the thread part).
TaskInfo splitTask(std::string_view s, size_t q, std::string_view after_pid, bool& fits) {
    TaskInfo t;
    std::string_view pname = s.substr(0, q > 0 ? q - 1 : 0);
    if (!pname.empty()) t.process = std::string(pname);
    t.pid = decFollowedBy(s.substr(q + 4), " ", false);
    fits = pname.size() <= kCommMax;
    if (!text::startsWith(after_pid, " thread ")) return t;
    std::string_view r = after_pid.substr(8);
    size_t last = std::string_view::npos;
    for (size_t i = r.find("pid "); i != std::string_view::npos; i = r.find("pid ", i + 1))
        if (i == 0 || r[i - 1] == ' ') last = i;
    if (last == std::string_view::npos) return t;
    auto tid = decFollowedBy(r.substr(last + 4), ") ", true);
    if (!tid) return t;
    std::string_view tname = r.substr(0, last > 0 ? last - 1 : 0);
    fits = fits && tname.size() <= kCommMax;
    if (!tname.empty()) t.thread = std::string(tname);
    t.tid = tid;
    return t;
}

}  // namespace

TaskInfo parseTaskInfo(std::string_view s) {
    s = text::trimRight(s);
    // The process part ends at a ` pid N` followed by ` thread ` (or a cut); names may contain
    // ` pid N thread ` themselves (`x pid 1 thread` is a valid comm), so the first split whose
    // two names fit the kernel's 15 bytes wins, else the first split.
    std::optional<TaskInfo> first;
    for (size_t i = s.find("pid "); i != std::string_view::npos; i = s.find("pid ", i + 1)) {
        if (i > 0 && s[i - 1] != ' ') continue;
        std::string_view num = s.substr(i + 4);
        size_t used = 0;
        if (!text::parseDec(num, &used) || num[0] == '-') continue;
        std::string_view rest = num.substr(used);
        if (rest.empty() || text::startsWith(rest, " thread ") ||
            (text::startsWith(" thread ", rest) && rest.size() < 8)) {
            bool fits = false;
            TaskInfo t = splitTask(s, i, rest, fits);
            if (fits) return t;
            if (!first) first = std::move(t);
        }
    }
    return first ? *first : TaskInfo{};
}

std::optional<std::string_view> taskLineText(std::string_view body) {
    for (std::string_view kw :
         {"Process information: process ", "Process ", "for process ", "in process "}) {
        if (!text::startsWith(body, kw)) continue;
        std::string_view rest = body.substr(kw.size());
        if (rest.find("pid ") == std::string_view::npos) return std::nullopt;
        return rest;
    }
    return std::nullopt;
}

void applyTask(const TaskInfo& t, Evidence& e) {
    if (t.process) e.process = t.process;
    if (t.pid) e.pid = t.pid;
    if (t.thread) e.thread = t.thread;
    if (t.tid) e.tid = t.tid;
}

void appendRaw(std::string& raw, std::string_view line) {
    appendRawLine(raw, line);
}

bool isBootMarker(std::string_view text) {
    while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
    if (text == "-- Reboot --") return true;
    return text.size() > 11 && text.starts_with("-- Boot ") && text.ends_with(" --");
}

}  // namespace gpufault::amdgpu
