// Whole-text-pipeline runs for the amdgpu page-fault tests: lines in (prefixes decoded as
// ingest decodes them), the amdgpu_page_fault records and all warnings out.
#pragma once

#include <string>
#include <vector>

#include "collectors/common/evidence.h"
#include "collectors/pipeline.h"
#include "tests/support/matcher_feed.h"

namespace gpufault::testing {

/// The amdgpu_page_fault records of one pipeline run, in emit order, and its warnings.
struct AmdgpuParsed {
    std::vector<Evidence> faults;
    std::vector<Warning> warnings;
};

/// Feeds `lines` (numbered from 1) through a TextPipeline and finishes it.
inline AmdgpuParsed parseAmdgpu(const std::vector<std::string>& lines) {
    CollectSink sink;
    TextPipeline pipe(sink);
    uint64_t n = 0;
    for (const auto& l : lines) pipe.feedLine(++n, l);
    pipe.finish();
    AmdgpuParsed p;
    for (auto& e : sink.evidences)
        if (e.kind == Kind::AmdgpuPageFault) p.faults.push_back(std::move(e));
    p.warnings = std::move(sink.warnings);
    return p;
}

}  // namespace gpufault::testing
