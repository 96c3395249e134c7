#include "collectors/kernel_log/amdgpu_fault.h"

namespace gpufault {

namespace {
// Placeholder until the parser lands: recognises nothing.
class AmdgpuFaultMatcher final : public Matcher {
public:
    void feed(const LogLine&, Sink&) override {}
};
}  // namespace

std::unique_ptr<Matcher> makeAmdgpuFaultMatcher() { return std::make_unique<AmdgpuFaultMatcher>(); }

}  // namespace gpufault
