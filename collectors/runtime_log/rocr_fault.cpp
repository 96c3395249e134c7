#include "collectors/runtime_log/rocr_fault.h"

namespace gpufault {

namespace {
// Placeholder until the parser lands: recognises nothing.
class RocrFaultMatcher final : public Matcher {
public:
    void feed(const LogLine&, Sink&) override {}
};
}  // namespace

std::unique_ptr<Matcher> makeRocrFaultMatcher() { return std::make_unique<RocrFaultMatcher>(); }

}  // namespace gpufault
