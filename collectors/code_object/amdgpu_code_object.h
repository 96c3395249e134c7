// AMDGPU code objects (ELF, e_machine 224): the target ID their header states, and their
// kernels. Source: LLVM AMDGPUUsage "ELF Header" and the EF_AMDGPU_MACH table (llvmorg-20.1.0),
// llvm/include/llvm/BinaryFormat/ELF.h. e_flags: bits 0–7 mach (processor); then by
// EI_ABIVERSION: 0 = code object v2 (features only in notes), 1 = v3 (0x100 xnack on, 0x200
// sramecc on), 2/3/4 = v4/v5/v6 (0x300 xnack, 0xc00 sramecc: 0 unsupported, 1 any, 2 off,
// 3 on); v6 generic processors carry their generic version in bits 24–31.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/code_object/bytes.h"
#include "collectors/code_object/target_id.h"

namespace gpufault::codeobj {

struct AmdCodeObject {
    uint8_t abi_version = 0;      ///< EI_ABIVERSION
    int code_object_version = 0;  ///< 2…6 (abi_version + 2)
    uint32_t e_flags = 0;
    TargetId target;                   ///< decoded from e_flags (features `Any` when v2)
    uint8_t generic_version = 0;       ///< v6 generic targets, else 0
    std::vector<std::string> kernels;  ///< kernel symbols (their `.kd` descriptor, suffix cut)
};

/// The processor name of an EF_AMDGPU_MACH value (`0x2f` → `gfx906`); "" when unknown.
std::string_view amdProcessorName(uint32_t mach);

/// Parses the code object in `b` (`base` = its file offset); `kernels` false leaves the symbol
/// table unread (and `kernels` empty). Errors: not ELF64 LE, e_machine other than 224, a
/// malformed section table or symbol table.
Result<AmdCodeObject> parseAmdCodeObject(Bytes b, uint64_t base, bool kernels = true);

/// Compares an entry's label with what its code object says: "" when they agree, else a
/// sentence ("labeled gfx1151 but holds gfx1030 code (e_flags 0x36)"). Features are compared
/// only for code object v4+ (earlier versions do not state `any`).
std::string checkLabel(const TargetId& label, const AmdCodeObject& co);

}  // namespace gpufault::codeobj
