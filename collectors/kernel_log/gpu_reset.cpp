#include "collectors/kernel_log/gpu_reset.h"

namespace gpufault {

namespace {
// Placeholder until the parser lands: recognises nothing.
class GpuResetMatcher final : public Matcher {
public:
    void feed(const LogLine&, Sink&) override {}
};
}  // namespace

std::unique_ptr<Matcher> makeGpuResetMatcher() { return std::make_unique<GpuResetMatcher>(); }

}  // namespace gpufault
