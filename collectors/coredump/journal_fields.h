// Journal entries as field maps, from the two text forms `journalctl` writes: the export format
// (`-o export`, systemd's "Journal Export Format": `NAME=value` lines, binary fields as `NAME`,
// a little-endian 64-bit size, the bytes and a newline; a blank line ends an entry) and JSON
// lines (`-o json`: a string, an array of bytes, or an array of several values per field).
// Pure: bytes in, field maps out.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/coredump/core_elf.h"
#include "collectors/coredump/systemd_coredump.h"

namespace gpufault::coredump {

/// Reads the export format incrementally: feed() any chunks, then finish(). Each complete entry
/// goes to the callback. Field values longer than `max_value` bytes (a core stored in the
/// journal, `COREDUMP=`) are skipped without being held: the field is present with an empty
/// value.
class JournalExportReader {
  public:
    using OnEntry = std::function<void(FieldMap&&, uint64_t offset)>;  ///< entry's first byte
    explicit JournalExportReader(OnEntry on, size_t max_value = 16u << 20)
        : on_(std::move(on)), max_(max_value) {}

    /// Chunks of the binary field `name` go to `sink` as they arrive instead of being held (a
    /// core systemd-coredump stored in the journal, `COREDUMP=`, gigabytes): `first` with the
    /// field's size before its first chunk. The field is in the entry with an empty value; the
    /// entry's callback comes after its last chunk.
    using Sink = std::function<void(std::string_view chunk, uint64_t size, bool first)>;
    void spill(std::string name, Sink sink) {
        spillName_ = std::move(name);
        spill_ = std::move(sink);
    }

    /// Consumes `data`. An error names the byte offset where the format broke; the reader is
    /// then unusable.
    Result<void> feed(std::string_view data);
    /// Ends the stream: delivers a last entry without its blank line; an error when the stream
    /// ended inside a binary field.
    Result<void> finish();
    uint64_t entries() const { return entries_; }

  private:
    void endEntry();
    OnEntry on_;
    size_t max_;
    std::string buf_;      ///< unconsumed bytes (a partial line or size)
    uint64_t offset_ = 0;  ///< stream offset of buf_[0]
    uint64_t entryStart_ = 0;
    FieldMap fields_;
    enum class State { Line, Size, Data, Newline } state_ = State::Line;
    std::string binName_;
    uint64_t binLeft_ = 0;
    bool binKeep_ = false, binSpill_ = false;
    std::string spillName_;
    Sink spill_;
    uint64_t entries_ = 0;
};

/// True when `head` (the first bytes of a file) looks like the export format: its first line
/// is `__CURSOR=…`, `__REALTIME_TIMESTAMP=…` or another `NAME=` with an upper-case name.
bool looksLikeJournalExport(std::string_view head);

/// One `journalctl -o json` line as a field map; nullopt when it is not a JSON object. Byte
/// arrays become their bytes, the first of several values is kept, null (a value journalctl
/// left out as too large) becomes "".
std::optional<FieldMap> parseJournalJsonLine(std::string_view line);

}  // namespace gpufault::coredump
