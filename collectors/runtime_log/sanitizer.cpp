#include "collectors/runtime_log/sanitizer.h"

namespace gpufault {

namespace {
// Placeholder until the parser lands: recognises nothing.
class SanitizerMatcher final : public Matcher {
public:
    void feed(const LogLine&, Sink&) override {}
};
}  // namespace

std::unique_ptr<Matcher> makeSanitizerMatcher() { return std::make_unique<SanitizerMatcher>(); }

}  // namespace gpufault
