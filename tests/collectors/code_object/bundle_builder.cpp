#include "tests/collectors/code_object/bundle_builder.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gpufault::codeobj::testing {

void putU64(std::string& s, uint64_t v) {
    for (int i = 0; i < 8; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}
void putU32(std::string& s, uint32_t v) {
    for (int i = 0; i < 4; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

std::string buildBundle(const std::vector<std::pair<std::string, std::string>>& entries,
                        uint64_t align) {
    uint64_t header = 32;
    for (const auto& [id, _] : entries) header += 24 + id.size();
    std::vector<uint64_t> offsets;
    uint64_t pos = header;
    for (const auto& [_, payload] : entries) {
        pos = (pos + align - 1) / align * align;
        offsets.push_back(pos);
        pos += payload.size();
    }
    std::string out = "__CLANG_OFFLOAD_BUNDLE__";
    putU64(out, entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
        putU64(out, offsets[i]);
        putU64(out, entries[i].second.size());
        putU64(out, entries[i].first.size());
        out += entries[i].first;
    }
    for (size_t i = 0; i < entries.size(); ++i) {
        out.resize(offsets[i], '\0');
        out += entries[i].second;
    }
    return out;
}

std::string fixture(const std::string& rel) {
    const char* dir = std::getenv("GPUFAULT_TEST_DATA");
    std::ifstream in(std::string(dir ? dir : "tests/data") + "/binaries/" + rel, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace gpufault::codeobj::testing
