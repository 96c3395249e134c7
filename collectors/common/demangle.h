// Kernel names for people: Itanium C++ demangling of ShaderNames (HIP kernels are mangled).
#pragma once

#include <string>
#include <string_view>

namespace gpufault {

/// The demangled name (`_Z9vectoraddPfS_S_i` → `vectoradd(float*, float*, float*, int)`);
/// the input unchanged when it is not a mangled C++ name (Tensile kernels are plain).
std::string demangle(std::string_view name);

/// The demangled name without its parameter list, cut to `max` characters with `…`:
/// `at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>, …>`.
std::string shortKernelName(std::string_view name, size_t max = 60);

}  // namespace gpufault
