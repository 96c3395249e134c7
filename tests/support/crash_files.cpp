#include "tests/support/crash_files.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>

namespace gpufault::testing {

std::string zstdCompress(const std::string& data) {
    std::string z(ZSTD_compressBound(data.size()), '\0');
    size_t n = ZSTD_compress(z.data(), z.size(), data.data(), data.size(), 3);
    z.resize(ZSTD_isError(n) ? 0 : n);
    return z;
}

std::string grownCore(std::string core, uint64_t extra, char fill) {
    auto get = [&](size_t off, size_t n) {
        uint64_t v = 0;
        for (size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(core[off + i]);
        return v;
    };
    auto set = [&](size_t off, uint64_t v) {
        for (size_t i = 0; i < 8; ++i) core[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
    };
    uint64_t phoff = get(32, 8), phnum = get(56, 2);
    for (uint64_t i = 0; i < phnum; ++i) {
        size_t ph = static_cast<size_t>(phoff + i * 56);
        if (get(ph, 4) == 1 && get(ph + 8, 8) + get(ph + 32, 8) == core.size()) {  // PT_LOAD
            set(ph + 32, get(ph + 32, 8) + extra);
            set(ph + 40, get(ph + 40, 8) + extra);
            break;
        }
    }
    core.append(static_cast<size_t>(extra), fill);
    return core;
}

std::string le64(uint64_t v) {
    std::string s;
    for (int i = 0; i < 8; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
    return s;
}

std::string exportEntry(const std::vector<std::pair<std::string, std::string>>& fields,
                        const std::string& message) {
    std::string s;
    for (const auto& [k, v] : fields) s += k + "=" + v + "\n";
    s += "MESSAGE\n" + le64(message.size()) + message + "\n\n";
    return s;
}

std::string base64(std::string_view in) {
    static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(in[k])); };
    for (; i + 3 <= in.size(); i += 3) {
        uint32_t w = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
        for (int k = 3; k >= 0; --k) out += a[(w >> (6 * k)) & 63];
    }
    if (i + 1 == in.size()) {
        uint32_t w = byte(i) << 16;
        out += std::string{a[(w >> 18) & 63], a[(w >> 12) & 63], '=', '='};
    } else if (i + 2 == in.size()) {
        uint32_t w = (byte(i) << 16) | (byte(i + 1) << 8);
        out += std::string{a[(w >> 18) & 63], a[(w >> 12) & 63], a[(w >> 6) & 63], '='};
    }
    return out;
}

std::string apportReport(const std::string& core, const std::string& fields, bool cut) {
    std::vector<std::string> chunks;
    chunks.push_back(std::string("\x1f\x8b\x08\x08\0\0\0\0\x02\xff", 10) + "CoreDump" +
                     std::string(1, '\0'));
    z_stream z{};
    deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, MAX_MEM_LEVEL, Z_DEFAULT_STRATEGY);
    std::string out(1 << 20, '\0');
    std::string in = core;
    for (size_t off = 0;; off += 65536) {
        bool last = off + 65536 >= in.size();
        z.next_in = reinterpret_cast<Bytef*>(in.data() + off);
        z.avail_in = static_cast<uInt>(std::min<size_t>(65536, in.size() - off));
        z.next_out = reinterpret_cast<Bytef*>(out.data());
        z.avail_out = static_cast<uInt>(out.size());
        deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
        std::string block(out.data(), out.size() - z.avail_out);
        if (last) {
            uint32_t crc = static_cast<uint32_t>(
                crc32(0, reinterpret_cast<const Bytef*>(in.data()), static_cast<uInt>(in.size())));
            uint32_t size = static_cast<uint32_t>(in.size());
            for (uint32_t v : {crc, size})
                for (int k = 0; k < 4; ++k) block += static_cast<char>((v >> (8 * k)) & 0xff);
        }
        if (!block.empty()) chunks.push_back(block);
        if (last) break;
    }
    deflateEnd(&z);
    std::string r = fields + "CoreDump: base64";
    size_t n = cut ? chunks.size() / 2 : chunks.size();
    for (size_t i = 0; i < n; ++i) r += "\n " + base64(chunks[i]);
    return r + "\n";
}

}  // namespace gpufault::testing
