#include "collectors/kernel_log/amdgpu_reset_lines.h"

#include <cctype>
#include <optional>
#include <string>

#include "collectors/common/text.h"
#include "collectors/kernel_log/amdgpu_line.h"

namespace gpufault::amdgpu {

namespace {

using text::endsWith;
using text::startsWith;
constexpr auto npos = std::string_view::npos;

// `ring %s timeout, signaled seq=%u, emitted seq=%u` / `ring %s timeout, but soft recovered`.
ResetEvent ringLine(std::string_view b, Evidence& e) {
    std::string_view r = b.substr(5);
    size_t sp = r.find(' ');
    if (sp == npos || sp == 0) return ResetEvent::None;
    std::string_view rest = r.substr(sp);
    if (!startsWith(rest, " timeout")) return ResetEvent::None;
    e.setAttr("ring", std::string(r.substr(0, sp)));
    if (startsWith(rest, " timeout, but soft recovered")) {
        e.setAttr("result", "soft_recovered");
        return ResetEvent::SoftRecovered;
    }
    if (size_t p = rest.find("signaled seq="); p != npos)
        if (auto v = decFollowedBy(rest.substr(p + 13), ", ", true))
            e.setAttr("signaled_seq", std::to_string(*v));
    if (size_t p = rest.find("emitted seq="); p != npos)
        if (auto v = decFollowedBy(rest.substr(p + 12), ", ", true))
            e.setAttr("emitted_seq", std::to_string(*v));
    return ResetEvent::RingTimeout;
}

// `GPU reset(%d) succeeded!`, `GPU reset(%d) failed`, `GPU reset(%d) failed with error %d`.
ResetEvent resetCountLine(std::string_view b, Evidence& e) {
    std::string_view r = b.substr(10);
    size_t used = 0;
    auto n = text::parseDec(r, &used);
    if (!n || !startsWith(r.substr(used), ")")) return ResetEvent::None;
    e.setAttr("reset_count", std::to_string(*n));
    r = r.substr(used + 1);
    if (startsWith(r, " succeeded")) {
        e.setAttr("result", "succeeded");
        return ResetEvent::ResetDone;
    }
    if (startsWith(r, " failed")) {
        e.setAttr("result", "failed");
        return ResetEvent::ResetFailed;
    }
    return ResetEvent::None;
}

// soc15.c/nv.c/vi.c/amdgpu_device.c: `MODE1 reset`, `MODE2 reset`, `BACO reset`,
// `PCI CONFIG reset`, `GPU mode1 reset`, `GPU smu mode1 reset`, `GPU psp mode1 reset`,
// `GPU BACO reset`, `GPU pci config reset`.
ResetEvent methodLine(std::string_view b, Evidence& e) {
    if (b.size() > 32 || !endsWith(b, " reset")) return ResetEvent::None;
    std::string low(b);
    for (auto& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view l = low;
    if (!startsWith(l, "gpu ") && !startsWith(l, "mode") && !startsWith(l, "baco") &&
        !startsWith(l, "pci"))
        return ResetEvent::None;
    for (auto [word, name] : {std::pair{"mode1 reset", "mode1"},
                              {"mode2 reset", "mode2"},
                              {"baco reset", "baco"},
                              {"pci config reset", "pci_config"}}) {
        if (endsWith(l, word)) {
            e.setAttr("reset_method", name);
            return ResetEvent::ResetMethod;
        }
    }
    return ResetEvent::None;
}

}  // namespace

bool endsEpisode(ResetEvent ev) {
    return ev == ResetEvent::SoftRecovered || ev == ResetEvent::RingResetOk ||
           ev == ResetEvent::ResetDone || ev == ResetEvent::ResetFailed;
}

namespace {

/// The message of a DRM_ERROR line: after Linux's `*ERROR* ` (`[drm] *ERROR* …`,
/// `[drm:amdgpu_job_timedout [amdgpu]] *ERROR* …`) or FreeBSD drm-kmod's `[drm ERROR :FUNC] `.
std::optional<std::string_view> drmErrorBody(std::string_view text) {
    if (size_t p = text.find("*ERROR* "); p != npos) return skipBlanks(text.substr(p + 8));
    if (size_t p = text.find("[drm ERROR :"); p != npos) {
        size_t close = text.find("] ", p);
        if (close != npos) return skipBlanks(text.substr(close + 2));
    }
    return std::nullopt;
}

}  // namespace

ResetEvent classifyResetLine(std::string_view b, Evidence& e) {
    if (b.empty()) return ResetEvent::None;
    if (b[0] == '[') {
        auto body = drmErrorBody(b);
        if (!body) return ResetEvent::None;
        b = *body;
    }
    if (startsWith(b, "ring ")) return ringLine(b, e);
    if (auto t = taskLineText(b)) {
        applyTask(parseTaskInfo(*t), e);
        return ResetEvent::Task;
    }
    if (startsWith(b, "Starting ") && endsWith(b, " ring reset")) {
        e.setAttr("ring", std::string(b.substr(9, b.size() - 9 - 11)));
        return ResetEvent::RingResetStart;
    }
    if (startsWith(b, "Ring ") && b.size() > 5) {
        std::string_view r = b.substr(5);
        std::string ring(r.substr(0, r.find(' ')));
        if (endsWith(b, " reset succeeded")) {
            e.setAttr("ring", ring);
            e.setAttr("result", "ring_reset_succeeded");
            return ResetEvent::RingResetOk;
        }
        if (endsWith(b, " reset failed")) {
            e.setAttr("ring", ring);
            return ResetEvent::RingResetFailed;
        }
        return ResetEvent::None;
    }
    if (startsWith(b, "GPU reset begin!") || startsWith(b, "GPU jobs stop begin!")) {
        if (size_t p = b.find("Source:"); p != npos)
            if (auto v = decFollowedBy(skipBlanks(b.substr(p + 7)), " ", true))
                e.setAttr("source", std::to_string(*v));
        return ResetEvent::ResetBegin;
    }
    if (startsWith(b, "GPU reset(")) return resetCountLine(b, e);
    if (startsWith(b, "GPU reset succeeded, trying to resume")) return ResetEvent::ResetResume;
    if (startsWith(b, "GPU reset end with ret = ")) {
        e.setAttr("result", b.substr(25) == "0" ? "succeeded" : "failed");
        return ResetEvent::ResetDone;
    }
    // radeon_gpu_reset() (radeon_device.c): after `GPU reset succeeded, trying to resume`, a
    // resume that failed prints `GPU reset failed`.
    if (text::trimRight(b) == "GPU reset failed") {
        e.setAttr("result", "failed");
        return ResetEvent::ResetFailed;
    }
    // radeon_fence.c: `GPU lockup (current fence id 0x%016llx last fence id 0x%016llx on ring
    // %d)`, radeon's ring timeout
    if (startsWith(b, "GPU lockup (current fence id ")) {
        if (size_t p = b.find(" on ring "); p != npos)
            if (auto v = decFollowedBy(b.substr(p + 9), ")", true))
                e.setAttr("ring", std::to_string(*v));
        return ResetEvent::RingTimeout;
    }
    if (startsWith(b, "GPU Recovery Failed")) {
        e.setAttr("result", "failed");
        return ResetEvent::ResetFailed;
    }
    // `MES failed to respond to msg=%s`, mes_v12's `MES(%d) failed to respond to msg=%s` (the
    // pipe), and the early `*ERROR* MES failed to response msg=%d`
    if (startsWith(b, "MES failed to respond") || startsWith(b, "MES failed to response") ||
        (startsWith(b, "MES(") && b.find(") failed to respond") != npos &&
         b.find(") failed to respond") < 8)) {
        if (size_t m = b.find("msg="); m != npos) {
            std::string_view msg = b.substr(m + 4);
            msg = msg.substr(0, msg.find(' '));
            if (!msg.empty()) e.setAttr("mes_msg", std::string(msg));
        }
        return ResetEvent::MesFailure;
    }
    if (startsWith(b, "MES might be in unrecoverable state")) return ResetEvent::MesFailure;
    if (size_t p = b.find("uncorrectable hardware error("); p != npos && p <= 4) {
        std::string_view what = b.substr(p + 29);
        size_t c = what.find(')');
        if (c == npos) return ResetEvent::None;
        e.setAttr("ras_error", std::string(what.substr(0, c)));
        return ResetEvent::RasUncorrectable;
    }
    return methodLine(b, e);
}

ResetEvent classifyDrmErrorLine(std::string_view text, Evidence& e) {
    auto b = drmErrorBody(text);
    if (!b) return ResetEvent::None;
    ResetEvent ev = classifyResetLine(*b, e);
    if (ev != ResetEvent::RingTimeout && ev != ResetEvent::SoftRecovered && ev != ResetEvent::Task)
        return ResetEvent::None;
    return ev;
}

std::string_view eventName(ResetEvent ev) {
    switch (ev) {
        case ResetEvent::None:
            return "none";
        case ResetEvent::RingTimeout:
            return "ring_timeout";
        case ResetEvent::SoftRecovered:
            return "ring_timeout_soft_recovered";
        case ResetEvent::Task:
            return "task";
        case ResetEvent::RingResetStart:
            return "ring_reset";
        case ResetEvent::RingResetOk:
            return "ring_reset_succeeded";
        case ResetEvent::RingResetFailed:
            return "ring_reset_failed";
        case ResetEvent::ResetBegin:
            return "reset_begin";
        case ResetEvent::ResetMethod:
            return "reset_method";
        case ResetEvent::ResetResume:
            return "reset_resume";
        case ResetEvent::ResetDone:
            return "reset_done";
        case ResetEvent::ResetFailed:
            return "reset_failed";
        case ResetEvent::MesFailure:
            return "mes_failure";
        case ResetEvent::RasUncorrectable:
            return "ras_uncorrectable";
    }
    return "none";
}

}  // namespace gpufault::amdgpu
