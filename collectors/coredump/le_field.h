// A little-endian field of a core's table row or note descriptor. Pure.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace gpufault::coredump {

/// The `T` at byte `off` of `b` (little-endian, as every core this reads: x86-64, AMDGPU and
/// CUDA device tables), or 0 when it does not lie wholly inside `b` (a cut or forged row).
template <class T>
T leField(std::string_view b, uint64_t off) {
    T v{};
    if (off <= b.size() && sizeof(T) <= b.size() - off) std::memcpy(&v, b.data() + off, sizeof(T));
    return v;
}

}  // namespace gpufault::coredump
