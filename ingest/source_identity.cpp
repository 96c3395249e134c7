#include "ingest/source_identity.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string_view>

namespace gpufault {

std::string headCursor(uint64_t hash) {
    return fmt::format("head:{:016x}", hash);
}

PrefixCheck checkPrefix(const SourceState& st,
                        int64_t size,
                        const std::function<std::optional<uint64_t>(int64_t)>& hashOf) {
    if (st.offset > size) return PrefixCheck::Differs;
    if (st.unended) {
        // Rows after the checkpoint were stored from bytes up to st.size (hostile review 17,
        // i2 H1): a file cut short of them, or holding other bytes there, is not the one read;
        // replacing those rows with what it holds now would delete records of the old content.
        if (st.size > 0 && size < st.size) return PrefixCheck::Differs;
        if (st.read_hash && st.size > 0 && st.size <= kPrefixHashCap) {
            auto h = hashOf(st.size);
            if (!h) return PrefixCheck::Unreadable;
            if (*h != *st.read_hash) return PrefixCheck::Differs;
        }
    }
    std::optional<uint64_t> want;
    int64_t len = st.offset;
    if (st.prefix_hash && st.offset > 0 && st.offset <= kPrefixHashCap) {
        want = st.prefix_hash;
    } else if (st.offset > kPrefixHashCap && st.cursor && st.cursor->starts_with("head:")) {
        std::string_view hex = std::string_view(*st.cursor).substr(5);
        uint64_t h = 0;
        auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), h, 16);
        if (ec == std::errc() && end == hex.data() + hex.size()) want = h;
        len = kPrefixHashCap;
    }
    if (!want) return PrefixCheck::Same;
    auto h = hashOf(len);
    if (!h) return PrefixCheck::Unreadable;
    return *h == *want ? PrefixCheck::Same : PrefixCheck::Differs;
}

void hashCheckpoint(FilePrefix& prefix, SourceState& cp, int64_t size) {
    cp.prefix_hash.reset();
    cp.cursor.reset();
    cp.read_hash.reset();
    if (cp.unended && size > cp.offset && size <= kPrefixHashCap) cp.read_hash = prefix.at(size);
    if (cp.offset < 0) return;
    if (cp.offset <= kPrefixHashCap) {
        cp.prefix_hash = prefix.at(cp.offset);
    } else if (auto h = prefix.at(kPrefixHashCap)) {
        cp.cursor = headCursor(*h);
    }
}

db::Result<FileSource> fileSource(Store& store,
                                  const SourceIdentity& id,
                                  int64_t size,
                                  FilePrefix& prefix) {
    auto src = store.source(id);
    if (!src) return std::unexpected(src.error());
    FileSource out{*src};
    SourceState& st = out.state;
    // `size` was taken before the row was read: another reader of the growing file (gpufaultd,
    // a second ingest) may have committed a checkpoint past it since. Compared with that size,
    // the file looked cut short and its stream was retired, every line stored again in a new
    // source (issue 3: an ingest beside the daemon). The file's size now, after the read.
    if (auto now = prefix.size(); now && *now > size) size = *now;
    out.size = size;
    bool read = st.offset > 0 || st.max_line > 0;
    // Unreadable (cut short while being hashed): not the bytes read before either.
    if (read &&
        checkPrefix(st, size, [&](int64_t n) { return prefix.at(n); }) != PrefixCheck::Same) {
        // Written again in place (`dmesg > crash.txt` after a reboot starts with the same
        // first line), or cut short: new content. The stored source keeps its records under
        // their numbers; the file is a new source, read from its start.
        if (auto r = store.begin(); !r) return std::unexpected(r.error());
        auto fail = [&](const db::Error& e) -> db::Result<FileSource> {
            (void)store.rollback();
            return std::unexpected(e);
        };
        if (auto r = store.retireSource(st.id); !r) return fail(r.error());
        auto fresh = store.source(id);
        if (!fresh) return fail(fresh.error());
        if (auto r = store.commit(); !r) return fail(r.error());
        out.replaced = st.id;
        // What it had read: past the checkpoint to its size where rows were stored from there.
        out.replaced_offset = st.unended ? std::max(st.offset, st.size) : st.offset;
        st = *fresh;
        return out;
    }
    // Unchanged: read to its end before (a last line without '\n' stored, the checkpoint at
    // its start: the size tells).
    if (st.complete && size == (st.unended ? st.size : st.offset)) {
        out.unchanged = true;
        return out;
    }
    if (st.offset > 0) {
        out.resumed = !st.complete;
    } else {
        st.line = 0;  // nothing read before its offset 0 (a new generation's numbering aside)
    }
    return out;
}

}  // namespace gpufault
