// Sources that are never resumed: each `gpufault ingest -` (stdin) is a stream of its own.
#pragma once

#include "schema/sqlite.h"
#include "schema/store.h"

namespace gpufault {

/// A new source for a stream that is never resumed nor recognised again (stdin: each
/// `gpufault ingest -`): kind `id.kind`, no device nor inode, path `id.path` + "#N" and
/// fingerprint "#N", N = 1 + the number of sources of that kind stored (else the next free
/// one); `id` is given that path and fingerprint. Its state: nothing read. Errors: SQLite's.
db::Result<SourceState> newStream(db::Db& db, SourceIdentity& id);

}  // namespace gpufault
