// Stack signatures: what makes two crashes the same bug, from the crashing thread's top frames.
// Pure functions over frames and paths.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/coredump/core_elf.h"
#include "collectors/coredump/stack.h"

namespace gpufault::coredump {

/// A module's file name without directory and version: `/opt/rocm/lib/libamdhip64.so.6.2.60200`
/// → `libamdhip64.so`, `libc.so.6` → `libc.so`, `crashmain` → `crashmain`.
std::string moduleStem(std::string_view path);

/// True for a module of the C library and loader: `libc.so`, `libpthread.so`, `libdl.so`,
/// `ld-linux*`, and the vDSO (`linux-vdso.so`, `[vdso]`).
bool isCLibraryModule(std::string_view path);

/// True for a module of the HIP runtime, whatever its directory and version:
/// `libamdhip64.so*`, `libhsa-runtime64.so*`, `libamd_comgr.so*`.
bool isGpuRuntimeModule(std::string_view path);

/// True for frames every crash of a kind shares and that say nothing about the bug: abort,
/// raise, pthread_kill (and glibc's __pthread_kill_implementation/_internal), gsignal,
/// `__libc_*`, `__GI_*` aliases, assert's `__assert_fail*`, and signal trampolines
/// (`__restore_rt`, `__kernel_rt_sigreturn`). Needs the symbol: for the signature, which must
/// not depend on symbols, stackSignature() also drops every frame of isCLibraryModule().
bool isGenericFrame(const Frame& f);

/// The frame's part of a signature, independent of debuginfo when the module's build-id is
/// known: `module+0xoffset` (module without directory and version; the offset from the
/// module's start, which the core alone fixes). Without a build-id: `module!symbol`, else
/// `module+0xoffset`; without a module: `?!0xpc`. Symbols are shown, never hashed, for a
/// module with a build-id: the same crash hashes the same whether its modules' symbols and
/// DWARF were found or not (docs/cores.md "Stack signatures").
std::string frameKey(const Frame& f);

/// A stack's signature: the first `depth` frames of the crashing thread that are neither
/// generic (isGenericFrame) nor in the C library or vDSO (isCLibraryModule), as frameKey()s,
/// hashed (FNV-1a 64, 16 hex digits). Empty when no frame is left.
struct StackSignature {
    std::string hash;
    std::vector<std::string> keys;
};
StackSignature stackSignature(const std::vector<Frame>& frames, size_t depth = 5);

/// GPU runtime versions from mapped file names (NT_FILE): `libamdhip64.so.6.2.60200` →
/// {"libamdhip64.so": "6.2.60200"}; HIP, HSA, CUDA, cuDNN, NCCL/RCCL, rocBLAS, hipBLASLt,
/// MIOpen, PyTorch's libtorch*. In a container these are the process's, not the host's.
std::map<std::string, std::string> runtimeVersions(const std::vector<MappedFile>& files);

}  // namespace gpufault::coredump
