// Crash files made in tests from a real core, in the producers' formats: systemd-coredump's
// zstd file, journal export entries, and apport's .crash report (problem_report.py's layout).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpufault::testing {

/// `data` compressed with libzstd (one frame), as systemd-coredump stores a core.
std::string zstdCompress(const std::string& data);

/// `core` (an ELF64 little-endian core whose last PT_LOAD ends the file) with `extra` bytes of
/// `fill` more in that segment: p_filesz and p_memsz grown, the bytes appended. A larger core
/// as its headers state it (bytes appended without that lie past its end and are not read).
std::string grownCore(std::string core, uint64_t extra, char fill);

/// The little-endian 64-bit size that precedes a binary field in the export format.
std::string le64(uint64_t v);

/// One journal export entry: text fields, then MESSAGE as a binary field (journalctl exports
/// multi-line values so), then the blank line.
std::string exportEntry(const std::vector<std::pair<std::string, std::string>>& fields,
                        const std::string& message);

/// RFC 4648 base64 with padding.
std::string base64(std::string_view in);

/// An apport report whose CoreDump holds `core`, written as ProblemReport.write() writes a
/// binary field: a gzip header chunk (the key as file name), raw deflate chunks (64 KiB of
/// input each), the CRC-32 and size trailer, each chunk base64-encoded on its own indented line.
/// `fields` come first (`Key: value` lines). `cut`: only the first half of the chunks.
std::string apportReport(const std::string& core, const std::string& fields, bool cut = false);

}  // namespace gpufault::testing
