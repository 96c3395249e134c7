#include "collectors/pipeline.h"


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
bool isIdentChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
}  // namespace

bool isApiTrace(const LogLine& l) {
    if (!l.amd_level || *l.amd_level != 3) return false;
    std::string_view t = l.text;
    size_t i = 0;
    while (i < t.size() && t[i] == ' ') ++i;
    if (t.substr(i, 5) == "\x1b[32m") i += 5;  // KGRN around the function name
    while (i < t.size() && t[i] == ' ') ++i;
    const size_t id = i;
    while (i < t.size() && isIdentChar(t[i])) ++i;
    std::string_view name = t.substr(id, i - id), rest = t.substr(i);
    if (name.empty()) return false;
    if (rest.starts_with(": Returned hipSuccess")) return true;
    if (!name.starts_with("hip") && !name.starts_with("__hip") && !name.starts_with("hsa"))
        return false;
    size_t j = 0;
    while (j < rest.size() && rest[j] == ' ') ++j;
    if (rest.substr(j, 4) == "\x1b[0m") j += 4;  // KNRM
    while (j < rest.size() && rest[j] == ' ') ++j;
    if (j >= rest.size() || rest[j] != '(') return false;
    while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
    return !rest.empty() && rest.back() == ')';
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
    decoder_.feed(line_no, raw, [this](const LogLine& l) {
        if (isApiTrace(l)) return;
        for (auto& m : matchers_) m->feed(l, out_);
    });
}

void TextPipeline::finish() {
    decoder_.finish([this](const LogLine& l) {
        for (auto& m : matchers_) m->feed(l, out_);
    });
    for (auto& m : matchers_) m->finish(out_);
}

}  // namespace gpufault
