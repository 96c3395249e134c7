// ROCr fault lines (FORMATS.md §2.1, §2.2) and the old debug agent's fault block (§9.7).
//
// Kind choice for `HW Exception by GPU node-N (Agent handle: …) reason :GPU Hang|ECC`: it is
// reported by the HSA runtime for a whole device (hang or ECC reset) and kills its queues, like
// the queue-error callback, so it is an `hsa_queue_error` (reason = the printed cause, no
// address). HIP's own `HW Exception Error` log line (hip_log.cpp) gets the same kind.
#include "collectors/runtime_log/rocr_fault.h"

#include <array>
#include <cctype>
#include <optional>
#include <string>

#include "collectors/common/text.h"
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

std::optional<int64_t> nodeAfter(std::string_view s, std::string_view key) {
    size_t i = s.find(key);
    if (i == std::string_view::npos) return std::nullopt;
    return text::parseDec(s.substr(i + key.size()));
}

class RocrFaultMatcher final : public Matcher {
  public:
    void feed(const LogLine& l, Sink& out) override {
        if (split_ && completeReason(l, out)) return;
        if (agent_ && continueAgent(l, out)) return;
        size_t at = l.text.find("by GPU ");
        if (at == std::string_view::npos) return;
        std::string_view before = l.text.substr(0, at);
        std::string_view after = l.text.substr(at + 7);
        if (before.ends_with("Memory access fault ")) {
            if (after.starts_with("node-")) return rocrLine(l, after, out);
            if (after.starts_with("agent: ")) return agentHeader(l, after.substr(7), out);
        } else if (before.ends_with("HW Exception ") && after.starts_with("node-")) {
            hwException(l, after, out);
        }
    }

    void finish(Sink& out) override {
        if (split_ && split_->reason->empty()) split_->reason.reset();
        if (split_) out.evidence(std::move(*split_));
        if (agent_) out.evidence(std::move(*agent_));
        split_.reset();
        agent_.reset();
    }

    std::optional<uint64_t> openSince() const override {
        if (split_) return split_->line;
        if (agent_) return agent_->line;
        return std::nullopt;
    }

  private:
    /// ROCr `Memory access fault by GPU node-%u (Agent handle: %p) on address %p%s. Reason: %s.`
    /// (runtime.cpp VMFaultHandler, ROCm ≥ 1.8; ≤ 1.7 without the Agent handle).
    void rocrLine(const LogLine& l, std::string_view s, Sink& out) {
        Evidence e = rt::baseEvidence(Kind::RocrMemoryFault, l, {}, "amd");
        e.gpu_node = text::parseDec(s.substr(5));
        if (auto h = text::after(s, "(Agent handle: ", ")"))
            e.setAttr("agent_handle", std::string(*h));
        if (size_t a = s.find(" on address "); a != std::string_view::npos) {
            std::string_view rest = s.substr(a + 12);
            bool masked = false;
            size_t used = 0;
            if (auto v = parseAddress(rest, &masked, &used)) {
                e.address = v;
                e.address_exact =
                    !masked && !rest.substr(used).starts_with("(may not be exact address)");
            }
        }
        size_t r = s.find("Reason: ");
        if (r == std::string_view::npos) return out.evidence(std::move(e));
        std::string_view reason = text::trim(s.substr(r + 8));
        if (size_t n = knownReasonLength(reason)) {
            reason = reason.substr(0, n);  // `%s.` then whatever the stream glued on
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
    /// agent: NAME`, then `Node: N`, then `Address: 0x<page>xxx (reasons;)`.
    void agentHeader(const LogLine& l, std::string_view name, Sink& out) {
        if (agent_) out.evidence(std::move(*agent_));
        agent_ = rt::baseEvidence(Kind::RocrMemoryFault, l, {}, "amd");
        agent_->setAttr("agent", std::string(text::trim(name)));
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

    /// `HW Exception by GPU node-%u (Agent handle: %p) reason :%s` (runtime.cpp
    /// HwExceptionHandler).
    void hwException(const LogLine& l, std::string_view s, Sink& out) {
        Evidence e = rt::baseEvidence(Kind::HsaQueueError, l, {}, "amd");
        e.gpu_node = text::parseDec(s.substr(5));
        if (auto h = text::after(s, "(Agent handle: ", ")"))
            e.setAttr("agent_handle", std::string(*h));
        if (size_t r = s.find("reason :"); r != std::string_view::npos) {
            std::string_view reason = text::trim(s.substr(r + 8));
            if (!reason.empty()) e.reason = std::string(reason);
        }
        e.setAttr("exception", "hw");
        out.evidence(std::move(e));
    }

    std::optional<Evidence> split_;  ///< ROCr line whose reason may continue on the next line
    std::optional<Evidence> agent_;  ///< old debug-agent block in progress
    int agent_lines_ = 0;
};

}  // namespace

std::unique_ptr<Matcher> makeRocrFaultMatcher() {
    return std::make_unique<RocrFaultMatcher>();
}

}  // namespace gpufault
