#include "collectors/code_object/compressed_bundle.h"

#include <fmt/format.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

namespace gpufault::codeobj {
namespace {

template <class T>
void putLe(std::vector<std::byte>& out, T v) {
    for (size_t i = 0; i < sizeof(T); ++i)
        out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}

// Inflates a zlib stream into exactly out.size() bytes.
Result<size_t> inflateInto(Bytes in, std::vector<std::byte>& out, uint64_t base) {
    z_stream z{};
    if (inflateInit(&z) != Z_OK) return fail(base, "zlib: inflateInit failed");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
    z.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), UINT32_MAX));
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    unsigned char spare;
    int rc = Z_OK;
    while (rc == Z_OK) {
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_OK && z.avail_out == 0) {
            // Output full but the stream goes on: one more byte tells a bomb from a clean end.
            z.next_out = &spare;
            z.avail_out = 1;
            rc = inflate(&z, Z_NO_FLUSH);
            if (z.avail_out == 0) rc = Z_BUF_ERROR;
            break;
        }
    }
    size_t produced = z.total_out, consumed = z.total_in;
    inflateEnd(&z);
    if (rc == Z_BUF_ERROR && produced >= out.size())
        return fail(base, fmt::format("zlib data inflates past the declared {} bytes", out.size()));
    if (rc != Z_STREAM_END)
        return fail(base,
                    fmt::format("zlib data is corrupt or truncated (zlib error {}) after {} "
                                "bytes out",
                                rc,
                                produced));
    if (produced != out.size())
        return fail(
            base,
            fmt::format("zlib data inflates to {} bytes, header says {}", produced, out.size()));
    return consumed;
}

}  // namespace

Result<CompressedBundleHeader> parseCompressedBundleHeader(Bytes b, uint64_t base) {
    if (!hasMagic(b, 0, kCompressedBundleMagic)) return fail(base, "no CCOB magic");
    CompressedBundleHeader h;
    auto version = readLe<uint16_t>(b, 4), method = readLe<uint16_t>(b, 6);
    if (!version || !method) return fail(base, "compressed bundle header truncated");
    h.version = *version;
    if (*method > 1)
        return fail(base + 6, fmt::format("compressed bundle: unknown method {}", *method));
    h.method = static_cast<Compression>(*method);
    std::optional<uint64_t> total, raw, hash;
    switch (h.version) {
        case 1:
            h.header_size = 20;
            raw = readLe<uint32_t>(b, 8);
            hash = readLe<uint64_t>(b, 12);
            total = b.size();
            break;
        case 2:
            h.header_size = 24;
            total = readLe<uint32_t>(b, 8);
            raw = readLe<uint32_t>(b, 12);
            hash = readLe<uint64_t>(b, 16);
            break;
        case 3:
            h.header_size = 32;
            total = readLe<uint64_t>(b, 8);
            raw = readLe<uint64_t>(b, 16);
            hash = readLe<uint64_t>(b, 24);
            break;
        default:
            return fail(base + 4, fmt::format("compressed bundle: unknown version {}", h.version));
    }
    if (!total || !raw || !hash)
        return fail(base,
                    fmt::format("compressed bundle v{} header truncated ({} of {} bytes)",
                                h.version,
                                b.size(),
                                h.header_size));
    if (*total < h.header_size || *total > b.size())
        return fail(base + 8,
                    fmt::format("compressed bundle total size {} outside [{}, {}]",
                                *total,
                                h.header_size,
                                b.size()));
    h.total_size = *total;
    h.uncompressed_size = *raw;
    h.hash = *hash;
    return h;
}

Result<std::vector<std::byte>> decompressBundle(Bytes b,
                                                const CompressedBundleHeader& h,
                                                uint64_t max_bytes,
                                                uint64_t base) {
    if (h.uncompressed_size > max_bytes)
        return fail(base,
                    fmt::format("compressed bundle declares {} uncompressed bytes, over the "
                                "limit of {}",
                                h.uncompressed_size,
                                max_bytes));
    auto payload = slice(b, h.header_size, h.total_size - h.header_size);
    if (!payload) return fail(base, "compressed bundle payload outside the buffer");
    uint64_t at = base + h.header_size;
    std::vector<std::byte> out(h.uncompressed_size);
    if (h.method == Compression::Zlib) {
        auto r = inflateInto(*payload, out, at);
        if (!r) return std::unexpected(r.error());
        return out;
    }
    size_t frame = ZSTD_findFrameCompressedSize(payload->data(), payload->size());
    if (ZSTD_isError(frame)) return fail(at, fmt::format("zstd: {}", ZSTD_getErrorName(frame)));
    unsigned long long declared = ZSTD_getFrameContentSize(payload->data(), frame);
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != h.uncompressed_size)
        return fail(
            at,
            fmt::format(
                "zstd frame holds {} bytes, header says {}", declared, h.uncompressed_size));
    size_t n = ZSTD_decompress(out.data(), out.size(), payload->data(), frame);
    if (ZSTD_isError(n))
        return fail(
            at,
            fmt::format("zstd: {} (declared {} bytes)", ZSTD_getErrorName(n), h.uncompressed_size));
    if (n != out.size())
        return fail(at,
                    fmt::format("zstd data inflates to {} bytes, header says {}", n, out.size()));
    return out;
}

std::vector<std::byte> compressBundle(Bytes bundle, Compression method, uint16_t version) {
    std::vector<std::byte> packed;
    if (method == Compression::Zlib) {
        uLongf n = compressBound(bundle.size());
        packed.resize(n);
        compress2(reinterpret_cast<Bytef*>(packed.data()),
                  &n,
                  reinterpret_cast<const Bytef*>(bundle.data()),
                  bundle.size(),
                  6);
        packed.resize(n);
    } else {
        packed.resize(ZSTD_compressBound(bundle.size()));
        packed.resize(ZSTD_compress(packed.data(), packed.size(), bundle.data(), bundle.size(), 3));
    }
    uint32_t headerSize = version == 1 ? 20 : version == 2 ? 24 : 32;
    uint64_t total = headerSize + packed.size();
    std::vector<std::byte> out;
    for (char c : kCompressedBundleMagic) out.push_back(static_cast<std::byte>(c));
    putLe<uint16_t>(out, version);
    putLe<uint16_t>(out, static_cast<uint16_t>(method));
    if (version == 2) putLe<uint32_t>(out, static_cast<uint32_t>(total));
    if (version == 3) putLe<uint64_t>(out, total);
    if (version == 3)
        putLe<uint64_t>(out, bundle.size());
    else
        putLe<uint32_t>(out, static_cast<uint32_t>(bundle.size()));
    putLe<uint64_t>(out, 0x0123456789abcdefULL);  // hash: not checked by readers
    out.insert(out.end(), packed.begin(), packed.end());
    return out;
}

}  // namespace gpufault::codeobj
