// Fingerprints of core files: which stored core a file is (a copy, a `.zst` copy, the file a
// `.zst` was decompressed from), and which it is not (another crash whose first pages are the
// same: forked siblings).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "schema/sqlite.h"

namespace gpufault {

/// `core-<FNV-1a of head>-<size>`: a core's fingerprint from its first 4 KiB (`head`: the notes,
/// pid and registers) and its size in bytes; the `core` source's identity (with device and
/// inode) and, before `core2-`, its content fingerprint. Pure.
std::string coreFingerprint(std::string_view head, uint64_t size);

/// The identity of a `core` source (sources.fingerprint, beside device and inode):
/// coreFingerprint() and the file's mtime in ns, `core-<FNV-1a of head>-<size>-m<mtime>`. A new
/// crash written over the same path (the kernel unlinks the old core, and the file system may
/// give the new one its inode number) is another source even with the same first 4 KiB and
/// size; a file touched but not changed is then found by its content (sameStoredCore). Pure.
std::string coreSourceFingerprint(std::string_view head, uint64_t size, int64_t mtime_ns);

/// `core2-<XXH3-64>-<size>`: the content fingerprint of the (uncompressed) core at `path`
/// (cores.content_fingerprint). Every byte counts: the hash covers each 4 KiB block that holds a
/// byte other than zero, with its offset, so two crashes differ even where their first pages
/// are the same (forked siblings), and a sparse file and its dense copy are the same. Holes
/// (SEEK_DATA) are not read: a 1 GiB core with 4 MiB of data costs a read of 4 MiB. Errors:
/// the file cannot be opened or read, or it shrank while read (the message names it).
/// `limit`: only the first `limit` bytes count (the size stated is then at most `limit`): the
/// fingerprint the file cut there would have.
db::Result<std::string> fileCoreFingerprint(const std::string& path,
                                            std::optional<uint64_t> limit = std::nullopt);

/// The core already stored with the content `content` (fileCoreFingerprint() of the
/// uncompressed core at `path`): a copy, a `.zst` copy, the file a `.zst` one came from: its id
/// and path. Rows stored before `core2-` fingerprints are candidates by coreFingerprint() of
/// `path` and the same only when their file, read again, has `content` (a file gone, unreadable
/// or compressed: not the same). nullopt when none. Errors: `path` cannot be read; the store.
db::Result<std::optional<std::pair<int64_t, std::string>>> sameStoredCore(
    db::Db& d, const std::string& path, const std::string& content);

/// A stored core of the same crash as a new one whose bytes are a prefix of the other's.
struct PrefixCore {
    int64_t id = 0, source_id = 0;
    std::string path;
    bool stored_longer = false;  ///< the stored core is the more complete one
};

/// The stored core of the same crash as the (uncompressed) core at `path` whose content
/// fingerprint is `content` when one is cut: the same notes (crashing thread, signal, si_addr,
/// command) and the shorter one's bytes a prefix of the longer one's (fileCoreFingerprint()
/// with a limit; a stored `.zst` is decompressed to check). A cut `.zst` and the raw core of
/// the same crash are one core. nullopt when none, or when `path`'s notes are not whole.
/// Errors: `path` cannot be read; the store.
db::Result<std::optional<PrefixCore>> prefixStoredCore(db::Db& d,
                                                       const std::string& path,
                                                       const std::string& content);

}  // namespace gpufault
