// Feeding the amdgpu page-fault matcher in the test_amdgpu_fault*.cpp files: lines in (with
// their kernel stamps, when a test gives them), the finished records out.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "collectors/common/evidence.h"
#include "collectors/common/log_line.h"
#include "collectors/common/text.h"
#include "collectors/kernel_log/amdgpu_fault.h"

namespace gpufault::testing {

/// One line given to the matcher: its raw text and, optionally, its kernel stamp (seconds).
struct In {
    std::string raw;
    std::optional<double> kernel_s = std::nullopt;
};

/// Feeds `lines` (numbered from 1; text = raw without trailing blanks) to a new amdgpu fault
/// matcher, finishes it and returns its records (each checked to be an amdgpu_page_fault).
inline std::vector<Evidence> runStamped(const std::vector<In>& lines) {
    auto m = makeAmdgpuFaultMatcher();
    CollectSink sink;
    uint64_t n = 0;
    for (auto& l : lines) {
        LogLine ll;
        ll.line = ++n;
        ll.raw = l.raw;
        ll.text = text::trimRight(l.raw);
        ll.time.kernel_s = l.kernel_s;
        m->feed(ll, sink);
    }
    m->finish(sink);
    for (auto& e : sink.evidences) EXPECT_EQ(e.kind, Kind::AmdgpuPageFault);
    return sink.evidences;
}

/// runStamped without kernel stamps.
inline std::vector<Evidence> run(const std::vector<std::string>& lines) {
    std::vector<In> in;
    for (auto& l : lines) in.push_back({l});
    return runStamped(in);
}

/// The device prefix of the constructed lines: a dev_printk BDF with the `amdgpu: ` tag.
inline const std::string D = "amdgpu 0000:c1:00.0: amdgpu: ";

}  // namespace gpufault::testing
