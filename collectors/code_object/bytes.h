// Bounds-checked little-endian reads over a byte span, and the error value every code-object
// parser returns: a message and the file offset it is about.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpufault::codeobj {

using Bytes = std::span<const std::byte>;

/// A parse error: what is wrong and where (a file offset, in bytes).
struct Error {
    uint64_t offset = 0;
    std::string message;
};

template <class T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(uint64_t offset, std::string message) {
    return std::unexpected(Error{offset, std::move(message)});
}

/// `n` bytes at `off`, or nullopt when any of them is outside `b` (overflow-safe).
inline std::optional<Bytes> slice(Bytes b, uint64_t off, uint64_t n) {
    if (off > b.size() || n > b.size() - off) return std::nullopt;
    return b.subspan(static_cast<size_t>(off), static_cast<size_t>(n));
}

/// A little-endian unsigned integer of sizeof(T) bytes at `off`; nullopt past the end.
template <class T>
std::optional<T> readLe(Bytes b, uint64_t off) {
    auto s = slice(b, off, sizeof(T));
    if (!s) return std::nullopt;
    T v = 0;
    for (size_t i = sizeof(T); i-- > 0;) v = static_cast<T>((v << 8) | std::to_integer<T>((*s)[i]));
    return v;
}

inline std::string_view asText(Bytes b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

inline Bytes asBytes(std::string_view s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

/// True when `b` has `magic` at `off`.
inline bool hasMagic(Bytes b, uint64_t off, std::string_view magic) {
    auto s = slice(b, off, magic.size());
    return s && asText(*s) == magic;
}

}  // namespace gpufault::codeobj
