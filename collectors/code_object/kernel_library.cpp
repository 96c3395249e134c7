#include "collectors/code_object/kernel_library.h"

#include <algorithm>
#include <cctype>

#include "collectors/code_object/compat.h"

namespace gpufault::codeobj {

namespace {

bool isProcessorChar(char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
}

}  // namespace

std::optional<std::string> kernelLibraryTarget(std::string_view name) {
    if (!name.starts_with("TensileLibrary") && !name.starts_with("Kernels.so-")) return {};
    if (!name.ends_with(".co") && !name.ends_with(".hsaco") && !name.ends_with(".dat")) return {};
    std::optional<std::string> found;
    for (size_t at = name.find("gfx"); at != std::string_view::npos;
         at = name.find("gfx", at + 3)) {
        size_t end = at + 3;
        while (end < name.size() && isProcessorChar(name[end])) ++end;
        // At least three characters (gfx803 … gfx1201) and a digit first: `gfx` + `dat` is no id.
        if (end - at < 6 || !std::isdigit(static_cast<unsigned char>(name[at + 3]))) continue;
        found = std::string(name.substr(at, end - at));
    }
    return found;
}

std::vector<std::string> KernelLibraryDir::processors() const {
    std::vector<std::string> out;
    for (const auto& [p, n] : files) out.push_back(p);
    return out;
}

std::vector<KernelLibraryDir> groupKernelLibraries(const std::vector<std::string>& paths) {
    std::map<std::string, KernelLibraryDir> dirs;
    for (const auto& p : paths) {
        size_t slash = p.rfind('/');
        std::string dir = slash == std::string::npos ? "." : p.substr(0, slash);
        std::string_view name =
            std::string_view(p).substr(slash == std::string::npos ? 0 : slash + 1);
        auto target = kernelLibraryTarget(name);
        if (!target) continue;
        auto& d = dirs[dir];
        d.dir = dir;
        ++d.files[*target];
    }
    std::vector<KernelLibraryDir> out;
    for (auto& [k, d] : dirs) out.push_back(std::move(d));
    return out;
}

bool libraryCovers(const KernelLibraryDir& dir,
                   std::string_view device,
                   std::string_view hsa_override_gfx_version) {
    auto want = parseTarget(device);
    if (!want) return false;
    return std::ranges::any_of(dir.files, [&](const auto& kv) {
        auto code = parseTarget(kv.first);
        return code && compatible(*code, *want, hsa_override_gfx_version).runs;
    });
}

}  // namespace gpufault::codeobj
