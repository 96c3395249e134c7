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

/// The largest field value JournalExportReader keeps by default, bytes (16 MiB).
inline constexpr size_t kMaxJournalFieldBytes = 16u << 20;

/// A field whose value was not kept (longer than the reader's `max_value`).
struct LeftOutField {
    std::string name;
    uint64_t entry_offset = 0;  ///< byte offset of the entry's first byte in the stream
    uint64_t offset = 0;        ///< byte offset of the field's first byte (its name)
    uint64_t size = 0;          ///< the value's size, bytes
};

/// Reads the export format incrementally: feed() any chunks, then finish(). Each complete entry
/// goes to the callback. Field values longer than `max_value` bytes (a core stored in the
/// journal, `COREDUMP=`; a 20 MiB MESSAGE), text or binary, are skipped without being held:
/// the field is present with an empty value, and `on_left_out` (when set) hears of it before
/// the entry is delivered.
class JournalExportReader {
  public:
    using OnEntry = std::function<void(FieldMap&&, uint64_t offset)>;  ///< entry's first byte
    using OnLeftOut = std::function<void(const LeftOutField&)>;
    explicit JournalExportReader(OnEntry on,
                                 size_t max_value = kMaxJournalFieldBytes,
                                 OnLeftOut on_left_out = {})
        : on_(std::move(on)), leftOut_(std::move(on_left_out)), max_(max_value) {}

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
    /// Ends the stream: delivers a last entry without its blank line. A stream that ends inside
    /// a binary field's size or data (an export cut in the COREDUMP= core it holds) delivers
    /// its entry without that field (a spilled one got its first bytes only); call
    /// cutInsideBinary() before finish() to know.
    Result<void> finish();
    /// A binary field the stream stopped inside: its name, and where ("offset N: binary field
    /// NAME, M of S bytes", or "…, its size cut").
    struct CutField {
        std::string name, what;
    };
    /// The binary field the stream has stopped inside so far (its size or data incomplete),
    /// nullopt when it stopped between fields.
    std::optional<CutField> cutInsideBinary() const;
    uint64_t entries() const { return entries_; }

  private:
    void endEntry();
    void leftOut(std::string name, uint64_t offset, uint64_t size);
    OnEntry on_;
    OnLeftOut leftOut_;
    size_t max_;
    std::string buf_;      ///< unconsumed bytes (a partial line or size)
    uint64_t offset_ = 0;  ///< stream offset of buf_[0]
    uint64_t entryStart_ = 0;
    FieldMap fields_;
    /// SkipLine: inside a text field whose value is over max_ (skipName_, from skipStart_).
    enum class State { Line, SkipLine, Size, Data, Newline } state_ = State::Line;
    std::string skipName_;
    uint64_t skipStart_ = 0, skipped_ = 0;
    std::string binName_;
    uint64_t binStart_ = 0;  ///< offset of the binary field's name line
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
