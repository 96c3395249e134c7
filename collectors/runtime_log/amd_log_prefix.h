// The AMD_LOG_LEVEL line prefix of HIP/ROCclr (`amd::log_printf`), FORMATS.md §3.1.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "collectors/common/swar.h"

namespace gpufault {

/// The fields of one AMD_LOG_LEVEL prefix. Views point into the parsed line.
struct AmdLogPrefix {
    int level = 0;                      ///< the `:N:` level (0 always/none, 1 error … 5)
    std::string_view file;              ///< source file, padding trimmed (`rocvirtual.cpp`)
    std::optional<int64_t> src_line;    ///< source line, padding trimmed
    std::optional<int64_t> runtime_us;  ///< stamp in µs (`us` layouts); 100 ns units are converted
    std::optional<int64_t> pid;         ///< `[pid:N tid:..]` or `N : [tid:..]`; nullopt if absent
    std::string_view runtime_tid;       ///< `0x...` thread handle, "" if absent
    size_t message_offset = 0;          ///< where the message starts in the line
};

/// Parses the AMD log prefix at the start of `line` (after leading spaces), in all six
/// generations of FORMATS.md §3.1 (ROCm 3.3 `%010lld:` without `us`, 3.7–4.3 `us:`, 4.5–5.6
/// `us: %-5d: [tid:0x..]` including a pid that runs into the colon, 5.7–6.2 `[pid:%-5d tid:0x..]`,
/// 6.3+ `us: [pid:N tid: 0x..]` only at level ≥ 4 else two spaces, the `%010lud us` typo), plus the
/// `log_entry`/`log_timestamped` layouts. Column padding may have been collapsed to one space; a
/// paste that lost the leading `:` is accepted when a stamp follows. `message_offset` skips the
/// blanks after the prefix (the layouts differ in how many they print). Cheap on other lines
/// (the first character decides). nullopt when the line does not start with such a prefix.
/// Lines in the printf columns (`%-25s`, `%-4d`) take a fixed-column path; others the general one.
std::optional<AmdLogPrefix> parseAmdLogPrefix(std::string_view line);

/// Where the fields of a line in the fixed printf columns of ROCm 5.7–6.2 lie
/// (`:%d:%-25s:%-4d: %010lld us: [pid:%-5d tid:0x%s] `); message 0: not in that shape.
struct AmdFixedShape {
    size_t message = 0;     ///< offset of the message: parseAmdLogPrefix()'s message_offset
    uint8_t stamp_len = 0;  ///< stamp digits from column 35
    uint8_t pid_at = 0, pid_len = 0;
    uint8_t tid_at = 0, tid_len = 0;  ///< the tid with its `0x`
};

/// Shape check only, for skipping lines cheaply: the fixed-column fields of `line`, with the
/// same acceptance and message offset as parseAmdLogPrefix()'s fixed-column path. No field is
/// read; SIMD on lines of ≥ 96 bytes.
AmdFixedShape amdFixedShape(std::string_view line);
/// The same without SIMD (tests compare the two).
AmdFixedShape amdFixedShapeScalar(std::string_view line);
/// The level-independent values of a line `amdFixedShape()` accepted: stamp (µs), pid, tid.
/// Inline: once per kept line, its five out-parameters went through memory.
inline void amdFixedValues(std::string_view line,
                           const AmdFixedShape& sh,
                           int64_t& runtime_us,
                           int64_t& pid,
                           std::string_view& runtime_tid) {
    const char* b = line.data();
    int64_t stamp = static_cast<int64_t>(swar::eightDigits(swar::load8(b + 35)));
    for (const char* d = b + 43; d < b + 35 + sh.stamp_len; ++d) stamp = stamp * 10 + (*d - '0');
    int64_t p = 0;
    for (const char* d = b + sh.pid_at; d < b + sh.pid_at + sh.pid_len; ++d)
        p = p * 10 + (*d - '0');
    runtime_us = stamp;
    pid = p;
    runtime_tid = std::string_view(b + sh.tid_at, sh.tid_len);
}

/// The same parse without the fixed-column path (tests compare the two).
std::optional<AmdLogPrefix> parseAmdLogPrefixGeneral(std::string_view line);

}  // namespace gpufault
