#include "collectors/runtime_log/hip_log.h"

namespace gpufault {

namespace {
// Placeholder until the parser lands: recognises nothing.
class HipLogMatcher final : public Matcher {
public:
    void feed(const LogLine&, Sink&) override {}
};
}  // namespace

std::unique_ptr<Matcher> makeHipLogMatcher() { return std::make_unique<HipLogMatcher>(); }

}  // namespace gpufault
