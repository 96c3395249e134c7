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
