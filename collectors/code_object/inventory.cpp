#include "collectors/code_object/inventory.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "collectors/code_object/elf.h"

namespace gpufault::codeobj {
namespace {

constexpr uint32_t kHipWrapperMagic = 0x48495046;  // "HIPF" (FORMATS.md §4.4)

// The entries of an uncompressed bundle at the start of `b`, each code object checked.
Result<BundleInfo> readBundle(Bytes b, uint64_t base, bool kernels) {
    auto bundle = parseOffloadBundle(b, base);
    if (!bundle) return std::unexpected(bundle.error());
    BundleInfo info;
    info.offset = base;
    info.size = bundle->extent;
    for (auto& e : bundle->entries) {
        EntryInfo ei{std::move(e), {}, {}, {}};
        if (!ei.entry.parsed.isHost() && ei.entry.size > 0) {
            Bytes payload = *slice(b, ei.entry.offset, ei.entry.size);
            auto co = parseAmdCodeObject(payload, base + ei.entry.offset, kernels);
            if (co) {
                auto label = parseTargetId(ei.entry.parsed.target);
                if (label) ei.mismatch = checkLabel(*label, *co);
                ei.code = std::move(*co);
            } else {
                ei.code_error = co.error().message;
            }
        }
        info.entries.push_back(std::move(ei));
    }
    return info;
}

Result<BundleInfo> readCompressed(Bytes b, uint64_t base, const InventoryOptions& opt) {
    auto h = parseCompressedBundleHeader(b, base);
    if (!h) return std::unexpected(h.error());
    BundleInfo info;
    info.offset = base;
    info.size = h->total_size;
    info.compressed = *h;
    if (!opt.decompress) return info;
    auto raw = decompressBundle(b, *h, opt.max_decompressed, base);
    if (!raw) return std::unexpected(raw.error());
    // Offsets inside the inflated bundle are not file offsets: errors point at the CCOB header.
    auto inner = readBundle(Bytes(raw->data(), raw->size()), 0, opt.kernels);
    if (!inner)
        return fail(base,
                    fmt::format("inflated bundle: {} (at 0x{:x} of the inflated bytes)",
                                inner.error().message,
                                inner.error().offset));
    info.entries = std::move(inner->entries);
    info.decompressed = true;
    return info;
}

}  // namespace

std::vector<std::string> BundleInfo::targets() const {
    std::vector<std::string> out;
    if (kind == Kind::CudaFatbin) {
        for (const auto& e : fatbin.entries) out.push_back(e.target());
    } else {
        for (const auto& e : entries)
            if (!e.entry.parsed.isHost()) out.push_back(e.entry.parsed.target);
    }
    std::ranges::sort(out);
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::vector<std::string> BundleInfo::kernels() const {
    std::vector<std::string> out;
    for (const auto& e : entries)
        if (e.code) out.insert(out.end(), e.code->kernels.begin(), e.code->kernels.end());
    std::ranges::sort(out);
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

bool looksLikeCodeContainer(Bytes file) {
    return isElf(file) || hasMagic(file, 0, kBundleMagic) ||
           hasMagic(file, 0, kCompressedBundleMagic);
}

void scanBundles(Bytes region, uint64_t base, const InventoryOptions& opt, Inventory& out) {
    std::string_view text = asText(region);
    size_t pos = 0;
    // The next plain magic is remembered while it lies ahead, and the compressed magic is looked
    // for only before it: each search covers the gap to the next bundle, never the rest of the
    // section again (Debian's librocsparse, 111 bundles in 1.2 GB and no CCOB, was otherwise
    // read 111 times over).
    size_t a = 0;
    bool aKnown = false;
    while (pos < text.size()) {
        if (!aKnown || (a != std::string_view::npos && a < pos)) {
            a = text.find(kBundleMagic, pos);
            aKnown = true;
        }
        size_t c = text.substr(0, a == std::string_view::npos ? text.size() : a)
                       .find(kCompressedBundleMagic, pos);
        size_t hit = std::min(a, c);
        if (hit == std::string_view::npos) break;
        Bytes rest = region.subspan(hit);
        auto info = hit == a ? readBundle(rest, base + hit, opt.kernels)
                             : readCompressed(rest, base + hit, opt);
        if (!info) {
            out.errors.push_back(info.error());
            pos = hit + 1;
            continue;
        }
        pos = hit + std::max<uint64_t>(info->size, 1);
        out.bundles.push_back(std::move(*info));
    }
}

Result<Inventory> inventory(Bytes file, const InventoryOptions& opt) {
    Inventory inv;
    if (!isElf(file)) {
        if (!looksLikeCodeContainer(file))
            return fail(0, "not an ELF file, offload bundle or compressed bundle");
        inv.format = "offload bundle";
        scanBundles(file, 0, opt, inv);
        return inv;
    }
    auto elf = parseElf(file);
    if (!elf) return std::unexpected(elf.error());
    if (elf->header.machine == kEmAmdgpu) {
        inv.format = "AMDGPU code object";
        auto co = parseAmdCodeObject(file, 0, opt.kernels);
        if (!co) return std::unexpected(co.error());
        BundleInfo b;
        b.kind = BundleInfo::Kind::CodeObject;
        b.size = file.size();
        EntryInfo e;
        e.entry.size = file.size();
        e.entry.id = "amdgcn-amd-amdhsa--" + co->target.text();
        e.entry.parsed = parseBundleEntryId("hipv4-" + e.entry.id);
        e.code = std::move(*co);
        b.entries.push_back(std::move(e));
        inv.bundles.push_back(std::move(b));
        return inv;
    }
    inv.format = "ELF";
    if (const auto* seg = elf->find(".hipFatBinSegment")) {
        auto bytes = elf->bytes(*seg);
        if (!bytes) return std::unexpected(bytes.error());
        for (uint64_t off = 0; off + 24 <= bytes->size(); off += 24) {
            if (readLe<uint32_t>(*bytes, off) != kHipWrapperMagic ||
                readLe<uint32_t>(*bytes, off + 4) != 1u) {
                inv.errors.push_back({seg->offset + off,
                                      ".hipFatBinSegment: wrapper without magic 0x48495046 / "
                                      "version 1"});
                continue;
            }
            ++inv.hip_wrappers;
        }
    }
    if (const auto* fb = elf->find(".hip_fatbin")) {
        auto bytes = elf->bytes(*fb);
        if (!bytes) return std::unexpected(bytes.error());
        scanBundles(*bytes, fb->offset, opt, inv);
        if (inv.hip_wrappers != 0 && inv.hip_wrappers != inv.bundles.size())
            inv.errors.push_back({fb->offset,
                                  fmt::format(".hipFatBinSegment has {} wrappers but "
                                              ".hip_fatbin holds {} bundles",
                                              inv.hip_wrappers,
                                              inv.bundles.size())});
    }
    if (const auto* nv = elf->find(".nv_fatbin")) {
        auto bytes = elf->bytes(*nv);
        if (!bytes) return std::unexpected(bytes.error());
        auto containers = parseNvFatbin(*bytes, nv->offset);
        if (!containers) {
            inv.errors.push_back(containers.error());
        } else {
            for (auto& c : *containers) {
                BundleInfo b;
                b.kind = BundleInfo::Kind::CudaFatbin;
                b.offset = c.offset;
                b.size = c.fat_size + 16;
                b.fatbin = std::move(c);
                inv.bundles.push_back(std::move(b));
            }
        }
    }
    return inv;
}

}  // namespace gpufault::codeobj
