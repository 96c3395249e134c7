// GPU cores: ROCr's `gpucore.<pid>` (ELF e_machine EM_AMDGPU, 224) and CUDA's GPU core dumps
// (ELF e_machine EM_CUDA, 190, with `.cudbg.*` sections). Only their metadata is read; they are
// not unwound. Pure.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/coredump/core_elf.h"

namespace gpufault::coredump {

struct GpuCoreMeta {
    std::optional<int64_t> pid;  ///< from the file name `gpucore.<pid>` or `…core.<pid>`
    uint32_t e_flags = 0;
    std::optional<std::string> target;  ///< AMDGPU: the processor of e_flags (`gfx90a`)
    size_t sections = 0;
    std::vector<std::string> cudbg_sections;  ///< CUDA: distinct `.cudbg.*` section names
};

/// The metadata a GPU core's structure states. `file_name` is the core's base name.
GpuCoreMeta gpuCoreMeta(const CoreLayout& c, std::string_view file_name);

nlohmann::json toJson(const GpuCoreMeta& m);

}  // namespace gpufault::coredump
