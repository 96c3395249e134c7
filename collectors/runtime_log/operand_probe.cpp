#include "collectors/runtime_log/operand_probe.h"

namespace gpufault {

namespace {
// Placeholder until the parser lands: recognises nothing.
class OperandProbeMatcher final : public Matcher {
public:
    void feed(const LogLine&, Sink&) override {}
};
}  // namespace

std::unique_ptr<Matcher> makeOperandProbeMatcher() { return std::make_unique<OperandProbeMatcher>(); }

}  // namespace gpufault
