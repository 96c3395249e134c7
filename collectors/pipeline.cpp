#include "collectors/pipeline.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>

#include "collectors/common/simd.h"
#include "collectors/kernel_log/amdgpu_fault.h"
#include "collectors/kernel_log/cpu_fault.h"
#include "collectors/kernel_log/gpu_reset.h"
#include "collectors/kernel_log/nvidia_xid.h"
#include "collectors/runtime_log/error_names.h"
#include "collectors/runtime_log/hip_log.h"
#include "collectors/runtime_log/operand_probe.h"
#include "collectors/runtime_log/rocr_fault.h"
#include "collectors/runtime_log/runtime_error.h"
#include "collectors/runtime_log/sanitizer.h"

namespace gpufault {

namespace {

/// `[A-Za-z0-9_]` as a table (one load per byte on the per-line path).
constexpr auto kIdent = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 256; ++c)
        t[c] =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    return t;
}();

bool startsWith(const char* p, const char* e, std::string_view lit) {
    return static_cast<size_t>(e - p) >= lit.size() && std::memcmp(p, lit.data(), lit.size()) == 0;
}

/// The end of the identifier `[A-Za-z0-9_]*` starting at `p`.
const char* identEnd(const char* p, const char* e) {
    if constexpr (simd::kSimd) {
        for (; e - p >= 16; p += 16) {
            const uint32_t m = simd::identChars(simd::load16(p));
            if (m != 0xffff) return p + std::countr_zero(~m);
        }
    }
    while (p < e && kIdent[static_cast<unsigned char>(*p)]) ++p;
    return p;
}

}  // namespace

bool isApiTraceMessage(std::string_view text) {
    const char* p = text.data();
    const char* e = p + text.size();
    while (p < e && *p == ' ') ++p;
    if (p < e && *p == '\x1b') {
        if (!startsWith(p, e, "\x1b[32m")) return false;  // KGRN around the function name
        p += 5;
        while (p < e && *p == ' ') ++p;
    }
    const char* id = p;
    p = identEnd(p, e);
    if (p == id) return false;
    if (p < e && *p == ':') {  // the exit line `%s: Returned %s : `: benign statuses only
        if constexpr (simd::kSimd) {
            // The common case, `: Returned hipSuccess` and a non-identifier byte, in one compare.
            static const char kSuccess[17] = ": Returned hipSu";
            if (e - p >= 22 && simd::startsWith(p, kSuccess, 16) &&
                std::memcmp(p + 16, "ccess", 5) == 0 && !kIdent[static_cast<unsigned char>(p[21])])
                return true;
        }
        if (!startsWith(p, e, ": Returned ")) return false;
        const char* st = p + 11;
        const char* q = identEnd(st, e);
        return q > st && errnames::isBenign(std::string_view(st, static_cast<size_t>(q - st)));
    }
    // The entry line `%s %s ( %s ) %s` of a hip…/__hip…/hsa… function.
    if (!(id[0] == 'h' && p - id >= 3 &&
          ((id[1] == 'i' && id[2] == 'p') || (id[1] == 's' && id[2] == 'a'))) &&
        !(id[0] == '_' && p - id >= 5 && std::memcmp(id, "__hip", 5) == 0))
        return false;
    while (p < e && *p == ' ') ++p;
    if (startsWith(p, e, "\x1b[0m")) p += 4;  // KNRM
    while (p < e && *p == ' ') ++p;
    if (p >= e || *p != '(') return false;
    while (e > p && (e[-1] == ' ' || e[-1] == '\r')) --e;
    return e[-1] == ')';
}

bool isApiTrace(const LogLine& l) {
    return l.amd_level && *l.amd_level == 3 && isApiTraceMessage(l.text);
}

std::vector<std::unique_ptr<Matcher>> makeTextMatchers() {
    std::vector<std::unique_ptr<Matcher>> m;
    m.push_back(makeAmdgpuFaultMatcher());
    m.push_back(makeGpuResetMatcher());
    m.push_back(makeNvidiaXidMatcher());
    m.push_back(makeCpuFaultMatcher());
    m.push_back(makeRocrFaultMatcher());
    m.push_back(makeHipLogMatcher());
    m.push_back(makeRuntimeErrorMatcher());
    m.push_back(makeSanitizerMatcher());
    m.push_back(makeOperandProbeMatcher());
    return m;
}

bool isNamedDispatchContext(std::string_view m) {
    return m.starts_with("ShaderName : ") || m.starts_with("Graph shader name : ");
}

TextPipeline::TextPipeline(Sink& out) : out_(out), matchers_(makeTextMatchers()) {
    if (matchers_.size() > 64) std::abort();  // the bit masks of match()
    for (size_t i = 0; i < matchers_.size(); ++i) {
        const uint64_t bit = uint64_t{1} << i;
        all_ |= bit;
        if (matchers_[i]->kernelLogOnly()) kernelOnly_ |= bit;
        if (matchers_[i]->ownsDispatchLines()) owner_ |= bit;
    }
    skippable_ = (~owner_ | kernelOnly_) & all_;
    refreshBusy();
}

void TextPipeline::refreshBusy() {
    busy_ = 0;
    for (size_t i = 0; i < matchers_.size(); ++i)
        if ((skippable_ >> i & 1) && !matchers_[i]->idle()) busy_ |= uint64_t{1} << i;
}

void TextPipeline::feedLine(uint64_t line_no, std::string_view raw, bool mayHaveCr) {
    decode(
        line_no,
        raw,
        [this](const LogLine& l) { match(l); },
        [&](std::string_view r, const FixedLine& fx) { matchFixed(line_no, r, fx); },
        mayHaveCr);
}

void TextPipeline::closeFolds(uint64_t next) {
    uint64_t due = next + kFoldCheck;
    for (auto& m : matchers_) {
        auto first = m->foldedSince();
        if (!first) continue;
        if (*first + kFoldLines <= next) {
            m->closeFolded(next + 1 - kFoldLines, out_);
            first = m->foldedSince();
        }
        if (first) due = std::min(due, *first + kFoldLines);
    }
    foldCheck_ = std::max(due, next + 1);  // a deferred one (Matcher::closeFolded()): next line
}

void TextPipeline::closeProcesses() {
    for (size_t k = 0; k < out_.ends.size(); ++k) {
        const Watch::End end = out_.ends[k];
        for (auto& m : matchers_) m->closeProcess(end.line, end.pid, end.rank, out_);
    }
    out_.ends.clear();
    out_.ended = false;
}

void TextPipeline::finish() {
    decodeFinish([this](const LogLine& l) { match(l); });
    matchFinish();
}

void TextPipeline::quiet() {
    decodeFinish([this](const LogLine& l) { match(l); });
    for (auto& m : matchers_) {
        m->quiet(out_);
        if (out_.ended) closeProcesses();
    }
    refreshBusy();
}

}  // namespace gpufault
