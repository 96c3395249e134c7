#include "collectors/kernel_log/cpu_fault.h"

namespace gpufault {

namespace {
// Placeholder until the parser lands: recognises nothing.
class CpuFaultMatcher final : public Matcher {
public:
    void feed(const LogLine&, Sink&) override {}
};
}  // namespace

std::unique_ptr<Matcher> makeCpuFaultMatcher() { return std::make_unique<CpuFaultMatcher>(); }

}  // namespace gpufault
