#include "collectors/code_object/offload_bundle.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpufault::codeobj {

Result<OffloadBundle> parseOffloadBundle(Bytes b, uint64_t base) {
    if (!hasMagic(b, 0, kBundleMagic)) return fail(base, "no __CLANG_OFFLOAD_BUNDLE__ magic");
    auto n = readLe<uint64_t>(b, 24);
    if (!n) return fail(base + 24, "offload bundle truncated in its entry count");
    constexpr uint64_t kMinEntry = 24;  // offset, size, id_len
    if (*n == 0 || *n > (b.size() - 32) / kMinEntry)
        return fail(base + 24,
                    fmt::format("offload bundle entry count {} does not fit in the {} "
                                "bytes that follow",
                                *n,
                                b.size() - 32));
    OffloadBundle out;
    out.entries.reserve(*n);
    uint64_t pos = 32;
    for (uint64_t i = 0; i < *n; ++i) {
        auto off = readLe<uint64_t>(b, pos), size = readLe<uint64_t>(b, pos + 8),
             len = readLe<uint64_t>(b, pos + 16);
        if (!off || !size || !len)
            return fail(base + pos, fmt::format("offload bundle entry {} header truncated", i));
        auto id = slice(b, pos + 24, *len);
        if (!id)
            return fail(base + pos + 16,
                        fmt::format("offload bundle entry {}: ID length {} runs "
                                    "past the end",
                                    i,
                                    *len));
        if (*off == 0 || !slice(b, *off, *size))
            return fail(base + pos,
                        fmt::format("offload bundle entry {}: payload 0x{:x}+0x{:x} "
                                    "lies outside the 0x{:x} bytes available",
                                    i,
                                    *off,
                                    *size,
                                    b.size()));
        BundleEntry e{*off, *size, std::string(asText(*id)), {}};
        e.parsed = parseBundleEntryId(e.id);
        out.entries.push_back(std::move(e));
        pos += 24 + *len;
    }
    out.extent = pos;
    for (const auto& e : out.entries) out.extent = std::max(out.extent, e.offset + e.size);
    return out;
}

}  // namespace gpufault::codeobj
