// Row readers shared by the query files (internal to schema/): a statement's rows as the
// structs of schema/queries.h.
#pragma once

#include <optional>
#include <vector>

#include "schema/queries.h"
#include "schema/sqlite.h"

namespace gpufault::query_rows {

/// Column `c` as an unsigned value (addresses are stored as their signed 64-bit pattern).
inline std::optional<uint64_t> optU64(const db::Stmt& s, int c) {
    return s.isNull(c) ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(s.i64(c)));
}

/// Every row of `s`, each read by `read(s)`.
template <typename Row, typename F>
db::Result<std::vector<Row>> collect(db::Stmt& s, F&& read) {
    std::vector<Row> out;
    for (;;) {
        auto row = s.step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.push_back(read(s));
    }
    return out;
}

/// The columns readOperand() reads (alias `o` for operands, with kOperandJoins).
inline constexpr const char* kOperandColumns =
    "o.id, s.path, o.line, o.pid, o.name, o.ptr, o.end, o.arg_ptr, o.shape, o.stride, o.dtype, "
    "o.origin, o.rank, o.runtime_us, k.name";
inline constexpr const char* kOperandJoins =
    "JOIN sources s ON s.id = o.source_id LEFT JOIN dispatches dd ON dd.id = o.dispatch_id "
    "LEFT JOIN kernels k ON k.id = dd.kernel_id";

/// An operand row from kOperandColumns starting at column `c`.
inline OperandRow readOperand(const db::Stmt& s, int c) {
    OperandRow r;
    r.id = s.i64(c++);
    r.source = s.str(c++);
    r.o.line = static_cast<uint64_t>(s.i64(c++));
    r.o.pid = s.optI64(c++);
    r.o.name = s.str(c++);
    r.o.ptr = static_cast<uint64_t>(s.i64(c++));
    r.o.end = static_cast<uint64_t>(s.i64(c++));
    r.o.arg_ptr = optU64(s, c++);
    r.o.shape = s.optStr(c++);
    r.o.stride = s.optStr(c++);
    r.o.dtype = s.optStr(c++);
    r.o.origin = s.str(c++);
    r.o.rank = s.optI64(c++);
    r.o.time.runtime_us = s.optI64(c++);
    r.dispatch_kernel = s.optStr(c++);
    return r;
}

/// A dispatch row: id, source path, line, runtime_us, pid, runtime tid, kernel name, rank.
inline DispatchRow readDispatch(const db::Stmt& s) {
    DispatchRow r;
    r.id = s.i64(0);
    r.source = s.str(1);
    r.d.line = static_cast<uint64_t>(s.i64(2));
    r.d.time.runtime_us = s.optI64(3);
    r.d.pid = s.optI64(4);
    r.d.runtime_tid = s.str(5);
    r.d.kernel = s.str(6);
    r.d.rank = s.optI64(7);
    return r;
}

}  // namespace gpufault::query_rows
