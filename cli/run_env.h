// `gpufault run`: which environment variables describe a GPU job, and how they are kept.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <string>
#include <string_view>

namespace gpufault::cli {

/// The GPU-relevant variables of `envp` (NAME=VALUE strings, null-terminated array): names
/// starting with AMD_, HIP_, HSA_, ROCBLAS_, HIPBLASLT_, MIOPEN_, TORCH_, PYTORCH_, CUDA_,
/// NCCL_, RCCL_, or ending in _VISIBLE_DEVICES, and LOCAL_RANK, RANK, WORLD_SIZE. A value is
/// replaced by `<redacted>` when looksSecret() says so (collectors/common/redact.h: names with
/// TOKEN, SECRET, PASSWORD, PASSPHRASE, KEY, CREDS, …, or a part PW/PWD/PASS/CRED; URLs with
/// `user:password@`).
std::map<std::string, std::string> gpuEnvironment(const char* const* envp);

/// True when `name` is one gpuEnvironment() keeps.
bool isGpuVariable(std::string_view name);

/// AMD_LOG_MASK for `--amd-log-mask`: comma-separated names of rocclr's LOG_* bits
/// (rocclr/utils/debug.hpp: api, cmd, wait, aql, queue, sig, lock, kern, copy, copy2,
/// resource, init, misc, aql2, code, cmd2, location, mem, mem_pool, ts, comgr) or a number
/// (decimal or 0x…). `location` is always added so lines keep their file:line prefix.
/// Errors name the unknown word.
std::expected<uint64_t, std::string> parseAmdLogMask(std::string_view spec);

}  // namespace gpufault::cli
