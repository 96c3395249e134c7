// Output helpers for the CLI: aligned tables on a TTY, tab-separated otherwise, JSON Lines.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufault::cli {

/// A table printed aligned when stdout is a terminal, tab-separated otherwise.
struct TextTable {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
    void print(std::FILE* out) const;

  private:
    void printSafe(std::FILE* out) const;
};

/// Text safe for a terminal and for tab-separated output: control bytes (ESC, TAB, CR, LF, …)
/// and DEL become `\xHH`, so a log line can never drive the terminal or break a row.
std::string printable(std::string_view s, bool keep_tab = false);
/// printable() per line of a multi-line text, keeping the line breaks and TABs.
std::string printableLines(std::string_view s);

/// One JSON value per line; invalid UTF-8 in strings is replaced, never thrown.
void printJsonLine(std::FILE* out, const nlohmann::json& j);
/// `0x` + 16 hex digits.
std::string addr16(uint64_t a);
/// Bytes with sign and digit grouping, plus GiB/MiB/KiB: `-4,381,900,800 B (-4.08 GiB)`.
std::string humanBytes(int64_t b);
/// A size without sign: `231,211,008 B (220.50 MiB)`.
std::string sizeText(uint64_t b);
/// `-` for null.
std::string orDash(const std::optional<std::string>& s);
std::string orDash(const std::optional<int64_t>& v);

}  // namespace gpufault::cli
