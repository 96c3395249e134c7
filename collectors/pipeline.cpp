#include "collectors/pipeline.h"

#include <array>
#include <cstring>

#include "collectors/kernel_log/amdgpu_fault.h"
#include "collectors/kernel_log/cpu_fault.h"
#include "collectors/kernel_log/gpu_reset.h"
#include "collectors/kernel_log/nvidia_xid.h"
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
        t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
    return t;
}();

bool startsWith(const char* p, const char* e, std::string_view lit) {
    return static_cast<size_t>(e - p) >= lit.size() && std::memcmp(p, lit.data(), lit.size()) == 0;
}

}  // namespace

bool isApiTrace(const LogLine& l) {
    if (!l.amd_level || *l.amd_level != 3) return false;
    const char* p = l.text.data();
    const char* e = p + l.text.size();
    while (p < e && *p == ' ') ++p;
    if (startsWith(p, e, "\x1b[32m")) p += 5;  // KGRN around the function name
    while (p < e && *p == ' ') ++p;
    const char* id = p;
    while (p < e && kIdent[static_cast<unsigned char>(*p)]) ++p;
    if (p == id) return false;
    if (startsWith(p, e, ": Returned hipSuccess")) return true;
    std::string_view name(id, static_cast<size_t>(p - id));
    if (!name.starts_with("hip") && !name.starts_with("__hip") && !name.starts_with("hsa"))
        return false;
    while (p < e && *p == ' ') ++p;
    if (startsWith(p, e, "\x1b[0m")) p += 4;  // KNRM
    while (p < e && *p == ' ') ++p;
    if (p >= e || *p != '(') return false;
    while (e > p && (e[-1] == ' ' || e[-1] == '\r')) --e;
    return e[-1] == ')';
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

TextPipeline::TextPipeline(Sink& out) : out_(out), matchers_(makeTextMatchers()) {}

void TextPipeline::feedLine(uint64_t line_no, std::string_view raw) {
    decode(line_no, raw, [this](const LogLine& l) { match(l); });
}

void TextPipeline::finish() {
    decodeFinish([this](const LogLine& l) { match(l); });
    matchFinish();
}

}  // namespace gpufault
