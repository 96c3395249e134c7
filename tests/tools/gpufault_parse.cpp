// Developer tool: runs the text pipeline over a file and prints evidence as JSON Lines,
// without a store. `gpufault_parse FILE [--check EXPECTED.jsonl] [--all]`.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "collectors/common/evidence_json.h"
#include "collectors/pipeline.h"
#include "tests/support/fixture_check.h"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: gpufault_parse FILE [--check EXPECTED.jsonl] [--context]\n";
        return 2;
    }
    std::string path = argv[1], expected;
    bool context = false;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--check" && i + 1 < argc) expected = argv[++i];
        if (a == "--context") context = true;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::cerr << path << ": cannot open\n";
        return 2;
    }
    gpufault::CollectSink sink;
    gpufault::TextPipeline pipe(sink);
    std::string line;
    uint64_t n = 0;
    while (std::getline(in, line)) pipe.feedLine(++n, line);
    pipe.finish();
    std::ostringstream out;
    for (auto& e : sink.evidences)
        out << toJson(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    std::cout << out.str();
    if (context) {
        for (auto& d : sink.dispatches)
            std::cout << "# dispatch line " << d.line << " pid " << (d.pid ? *d.pid : -1) << " tid "
                      << d.runtime_tid << " " << d.kernel << " args " << d.args.size() << "\n";
        for (auto& o : sink.operands)
            std::cout << "# operand line " << o.line << " " << o.name << " [" << std::hex << o.ptr
                      << "," << o.end << std::dec << ") " << o.origin << "\n";
        for (auto& w : sink.warnings)
            std::cout << "# warning line " << w.line << " " << w.message << "\n";
    }
    if (!expected.empty()) {
        std::ifstream ein(expected);
        std::stringstream ss;
        ss << ein.rdbuf();
        auto problems = gpufault::testing::checkCase(gpufault::testing::parseJsonLines(ss.str()),
                                                     gpufault::testing::parseJsonLines(out.str()));
        for (auto& p : problems) std::cerr << "FAIL " << p << "\n";
        std::cerr << (problems.empty() ? "PASS " : "FAIL ") << path << "\n";
        return problems.empty() ? 0 : 1;
    }
    return 0;
}
