// Builds offload bundles byte by byte for tests (the layout of OffloadBundler.cpp), and reads
// the real fixtures under tests/data/binaries.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "collectors/code_object/bytes.h"

namespace gpufault::codeobj::testing {

/// A bundle of (entry ID, payload) pairs, payloads placed after the header, `align`-aligned.
std::string buildBundle(const std::vector<std::pair<std::string, std::string>>& entries,
                        uint64_t align = 8);
void putU64(std::string& s, uint64_t v);
void putU32(std::string& s, uint32_t v);
/// The bytes of tests/data/binaries/<rel> (GPUFAULT_TEST_DATA); "" when missing.
std::string fixture(const std::string& rel);
inline Bytes bytesOf(const std::string& s) {
    return asBytes(s);
}

}  // namespace gpufault::codeobj::testing
