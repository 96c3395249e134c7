// Output helpers for the CLI: aligned tables on a TTY, tab-separated otherwise, JSON Lines.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpufault::cli {

/// What `events` and `show` say of a record with attr `unended` (made from a file's last line
/// before its newline was written: `gpufault ingest` of a file still being written).
inline constexpr const char* kUnendedNote =
    "from a last line without its newline: a value may be cut";

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

/// fmt::print of text whose values come from inputs (file names, names and values read from
/// logs, cores and crash reports): printableLines() of the formatted text, so no input byte can
/// drive the terminal; the format's own line breaks stay.
template <typename... A>
void printText(std::FILE* out, fmt::format_string<A...> f, A&&... a) {
    fmt::print(out, "{}", printableLines(fmt::format(f, std::forward<A>(a)...)));
}

/// Markdown (CommonMark/GFM) for `report --format md`: log text must not open HTML, break a code
/// span, a table row or a fence.
/// printable() with HTML's `&`, `<`, `>` as entities and `\`, `` ` ``, `[`, `]` backslash-escaped
/// (no code span, link or stray escape opens in log text): text outside code.
std::string mdText(std::string_view s);
/// A code span of printable(s): delimited by a backtick run longer than any in the text
/// (CommonMark "Code spans"), padded with a space when the text starts or ends with a backtick.
std::string mdCode(std::string_view s);
/// A table cell: `|` → `\|` (GFM tables split cells before code spans, so also in code).
std::string mdCell(std::string_view s);
/// A fenced code block of `body` (already printable, line breaks kept): the fence is a backtick
/// run longer than any in the body, at least 3 (CommonMark "Fenced code blocks").
std::string mdFence(std::string_view body);

/// One JSON value per line; invalid UTF-8 in strings is replaced, never thrown.
void printJsonLine(std::FILE* out, const nlohmann::json& j);
/// `0x` + 16 hex digits.
std::string addr16(uint64_t a);
/// Bytes with sign and digit grouping, plus GiB/MiB/KiB: `-4,381,900,800 B (-4.08 GiB)`.
std::string humanBytes(int64_t b);
/// `humanBytes(d) + " above end"` for a distance d ≥ 0 above an operand's end (exclusive: `address
/// − end`); 0, the first byte past the buffer, says so ("+0 B above end (the first byte past
/// it)"), since compute-sanitizer counts the same byte as "1 bytes after".
std::string aboveEndText(int64_t d);
/// "2 MiB aligned: yes (low 21 bits zero)" (and "near NULL" in the first 2 MiB); "NULL pointer"
/// for 0. Only for an exact address: an inexact one's low bits are not known.
std::string alignmentText(uint64_t a);
/// The span of an inexact fault address (a page start or masked address, the byte itself
/// unknown) to [ptr, end): "page start inside, …", "page start N below ptr", "page start N above
/// end", each "(exact byte unknown)"; never the off-by-one verdict aboveEndText() gives.
std::string approxSpanText(bool inside,
                           bool below,
                           const std::optional<int64_t>& distance,
                           const std::optional<int64_t>& from_ptr);
/// A size without sign: `231,211,008 B (220.50 MiB)`.
std::string sizeText(uint64_t b);
/// `2024-05-01T12:00:00Z` for UTC seconds since the epoch.
std::string utcText(int64_t seconds);
/// `1 incident`, `2 incidents`: the count and the noun, plural unless n is 1 (`plural` when the
/// plural is not noun + "s").
std::string counted(int64_t n, std::string_view noun, std::string_view plural = {});
/// `-` for null.
std::string orDash(const std::optional<std::string>& s);
std::string orDash(const std::optional<int64_t>& v);

}  // namespace gpufault::cli
