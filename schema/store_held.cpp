// Dispatches held by a stream's context windows behind its checkpoint (held_dispatches).
#include <fmt/format.h>

#include <charconv>
#include <string_view>

#include "schema/store.h"

namespace gpufault {

namespace {

/// `args` as the column holds them: one argument a line, `index ptr lo hi name`.
std::string encodeArgs(const std::vector<DispatchArg>& args) {
    std::string out;
    for (const DispatchArg& a : args) {
        fmt::format_to(std::back_inserter(out), "{} {} ", a.index, a.ptr);
        if (a.obj_lo)
            fmt::format_to(std::back_inserter(out), "{} ", *a.obj_lo);
        else
            out += "- ";
        if (a.obj_hi)
            fmt::format_to(std::back_inserter(out), "{} ", *a.obj_hi);
        else
            out += "- ";
        out += a.name;
        out += '\n';
    }
    return out;
}

/// The next space-separated field of `s` (taken off it).
std::string_view field(std::string_view& s) {
    size_t sp = s.find(' ');
    std::string_view f = s.substr(0, sp);
    s.remove_prefix(sp == std::string_view::npos ? s.size() : sp + 1);
    return f;
}

template <typename T>
bool number(std::string_view f, T& v) {
    auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    return ec == std::errc() && p == f.data() + f.size();
}

/// The arguments encodeArgs() wrote; false when `text` is not its form.
bool decodeArgs(std::string_view text, std::vector<DispatchArg>& out) {
    while (!text.empty()) {
        size_t nl = text.find('\n');
        if (nl == std::string_view::npos) return false;
        std::string_view l = text.substr(0, nl);
        text.remove_prefix(nl + 1);
        DispatchArg a;
        std::string_view lo, hi;
        if (!number(field(l), a.index) || !number(field(l), a.ptr)) return false;
        lo = field(l);
        hi = field(l);
        uint64_t v = 0;
        if (lo != "-") {
            if (!number(lo, v)) return false;
            a.obj_lo = v;
        }
        if (hi != "-") {
            if (!number(hi, v)) return false;
            a.obj_hi = v;
        }
        a.name.assign(l);
        out.push_back(std::move(a));
    }
    return true;
}

}  // namespace

db::Result<void> Store::putHeldDispatch(int64_t source_id, const Dispatch& d, bool stored) {
    auto ins = db_.prepare(
        "INSERT OR REPLACE INTO held_dispatches(source_id, line, context_line, runtime_us, pid, "
        "runtime_tid, kernel, args, stored, rank) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    if (!ins) return std::unexpected(ins.error());
    ins->bind(1, source_id).bind(2, d.line).bind(3, d.context_line).bind(4, d.time.runtime_us);
    ins->bind(5, d.pid).bind(6, d.runtime_tid).bind(7, d.kernel).bind(8, encodeArgs(d.args));
    ins->bind(9, static_cast<int64_t>(stored)).bind(10, d.rank);
    return ins->run();
}

db::Result<void> Store::setHeldDispatchStored(int64_t source_id, uint64_t line) {
    auto up = db_.prepare("UPDATE held_dispatches SET stored=1 WHERE source_id=?1 AND line=?2");
    if (!up) return std::unexpected(up.error());
    up->bind(1, source_id).bind(2, line);
    return up->run();
}

db::Result<void> Store::removeHeldDispatch(int64_t source_id, uint64_t line) {
    auto del = db_.prepare("DELETE FROM held_dispatches WHERE source_id=?1 AND line=?2");
    if (!del) return std::unexpected(del.error());
    del->bind(1, source_id).bind(2, line);
    return del->run();
}

db::Result<void> Store::removeHeldDispatchesFrom(int64_t source_id, uint64_t from_line) {
    auto del = db_.prepare("DELETE FROM held_dispatches WHERE source_id=?1 AND context_line>=?2");
    if (!del) return std::unexpected(del.error());
    del->bind(1, source_id).bind(2, from_line);
    return del->run();
}

db::Result<std::vector<HeldDispatch>> Store::heldDispatches(int64_t source_id,
                                                            uint64_t before_line) {
    auto sel = db_.prepare(
        "SELECT line, context_line, runtime_us, pid, runtime_tid, kernel, args, stored, rank "
        "FROM held_dispatches WHERE source_id=?1 AND context_line<?2 ORDER BY line");
    if (!sel) return std::unexpected(sel.error());
    sel->bind(1, source_id).bind(2, before_line);
    std::vector<HeldDispatch> out;
    for (;;) {
        auto row = sel->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        HeldDispatch h;
        h.d.line = static_cast<uint64_t>(sel->i64(0));
        h.d.context_line = static_cast<uint64_t>(sel->i64(1));
        h.d.time.runtime_us = sel->optI64(2);
        h.d.pid = sel->optI64(3);
        h.d.runtime_tid = sel->str(4);
        h.d.kernel = sel->str(5);
        if (!decodeArgs(sel->str(6), h.d.args))
            return std::unexpected(
                db::Error{fmt::format("held dispatch of line {}: arguments unreadable", h.d.line)});
        h.stored = sel->i64(7) != 0;
        h.d.rank = sel->optI64(8);
        out.push_back(std::move(h));
    }
    return out;
}

}  // namespace gpufault
