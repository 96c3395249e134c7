// Which stored source an input continues: the resume decision of `gpufault ingest` (a file
// found again by device + inode + first-line fingerprint is only resumed while its bytes before
// the checkpoint are those read) and its check shared with gpufaultd (FileTail::identify).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ingest/prefix_hash.h"
#include "schema/sqlite.h"
#include "schema/store.h"

namespace gpufault {

/// What checkPrefix() found.
enum class PrefixCheck {
    Same,        ///< the file holds what the checkpoint was written after (or nothing says not)
    Differs,     ///< shorter than the checkpoint, or its bytes before it hash otherwise
    Unreadable,  ///< `hashOf` could not read that far (cut short while being hashed)
};

/// Whether a file of `size` bytes still holds what checkpoint `st` was written after: not
/// shorter than st.offset; for a checkpoint with rows stored past it (st.unended), not shorter
/// than st.size and its bytes [0, st.size) hashing to st.read_hash where that is known; and, when the checkpoint has a prefix hash (offsets up to
/// kPrefixHashCap; 0 < offset), its bytes [0, st.offset) hash to it; beyond kPrefixHashCap,
/// when `gpufault ingest` wrote it (st.cursor holds headCursor()), its first kPrefixHashCap
/// bytes hash to that. `hashOf(len)` is the file's PrefixHasher value of bytes [0, len),
/// nullopt when they cannot be read.
PrefixCheck checkPrefix(const SourceState& st,
                        int64_t size,
                        const std::function<std::optional<uint64_t>(int64_t)>& hashOf);

/// The source `gpufault ingest` reads a file into, and from where.
struct FileSource {
    SourceState state;       ///< the checkpoint to start from (offset, line)
    bool unchanged = false;  ///< ingested completely and unchanged: nothing to read
    bool resumed = false;    ///< continues an interrupted ingest (or reads what was appended)
    /// The stored source was written for other bytes (the file was rewritten in place, under
    /// the same first line; or cut short): that source was retired (Store::retireSource, its
    /// records kept) and `state` is a new source read from the start. Its id; 0: none.
    int64_t replaced = 0;
    int64_t replaced_offset = 0;  ///< bytes the replaced source had read
    /// The file's size (bytes) as the decision saw it: the size given, or the size after the
    /// source's row was read when the file had grown since.
    int64_t size = 0;
};

/// Finds (or creates) the source of file `id` (kind "file", device and inode set) of `size`
/// bytes (taken again after the row is read: the file may have grown) and decides where to read it from, checking the stored checkpoint's prefix hash with
/// `prefix` (the file's; at most kPrefixHashCap bytes hashed). Retiring a replaced source is
/// its own transaction (no transaction may be open). Errors: the store's.
db::Result<FileSource> fileSource(Store& store,
                                  const SourceIdentity& id,
                                  int64_t size,
                                  FilePrefix& prefix);

/// Sets what `gpufault ingest` stores with a file checkpoint `cp` to recognise its bytes:
/// cp.prefix_hash, the hash of bytes [0, cp.offset), up to kPrefixHashCap; beyond it,
/// cp.cursor = headCursor() of the first kPrefixHashCap bytes (a file source has no other
/// cursor; gpufaultd's checkpoints drop it); for an unended checkpoint, cp.read_hash of the
/// `size` bytes read (up to kPrefixHashCap). Each stays unset when the file cannot be read
/// that far (a pipe).
void hashCheckpoint(FilePrefix& prefix, SourceState& cp, int64_t size);

/// A file source's cursor holding the hash of its first kPrefixHashCap bytes ("head:" and
/// 16 hex digits).
std::string headCursor(uint64_t hash);

}  // namespace gpufault
