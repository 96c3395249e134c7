#include "collectors/runtime_log/runtime_error.h"

namespace gpufault {

namespace {
// Placeholder until the parser lands: recognises nothing.
class RuntimeErrorMatcher final : public Matcher {
public:
    void feed(const LogLine&, Sink&) override {}
};
}  // namespace

std::unique_ptr<Matcher> makeRuntimeErrorMatcher() { return std::make_unique<RuntimeErrorMatcher>(); }

}  // namespace gpufault
