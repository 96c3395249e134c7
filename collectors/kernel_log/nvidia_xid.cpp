#include "collectors/kernel_log/nvidia_xid.h"

namespace gpufault {

namespace {
// Placeholder until the parser lands: recognises nothing.
class NvidiaXidMatcher final : public Matcher {
public:
    void feed(const LogLine&, Sink&) override {}
};
}  // namespace

std::unique_ptr<Matcher> makeNvidiaXidMatcher() { return std::make_unique<NvidiaXidMatcher>(); }

}  // namespace gpufault
