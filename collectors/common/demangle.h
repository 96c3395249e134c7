// Kernel names for people: Itanium C++ demangling of ShaderNames (HIP kernels are mangled).
#pragma once

#include <string>
#include <string_view>

namespace gpufault {

/// The longest demangled name, in bytes: a 573-byte name of nested back-references
/// demangled to 654 MB in 16 s with __cxa_demangle (hostile review 152); real kernel names of
/// template libraries demangle to a few KiB.
inline constexpr size_t kMaxDemangled = 64u << 10;

/// The demangled name (`_Z9vectoraddPfS_S_i` → `vectoradd(float*, float*, float*, int)`), as
/// __cxa_demangle prints it (libiberty's cp-demangle, through its callback interface, which
/// allocates nothing); the input unchanged when it is not a mangled C++ name (Tensile kernels
/// are plain), is longer than 4 KiB, or demangles to more than kMaxDemangled bytes.
std::string demangle(std::string_view name);

/// The demangled name without its parameter list, cut to `max` characters with `…`:
/// `at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>, …>`.
std::string shortKernelName(std::string_view name, size_t max = 60);

}  // namespace gpufault
