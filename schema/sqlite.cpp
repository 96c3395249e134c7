#include "schema/sqlite.h"

#include <fmt/format.h>

namespace gpufault::db {

Stmt& Stmt::operator=(Stmt&& o) noexcept {
    if (this != &o) {
        if (s_) sqlite3_finalize(s_);
        db_ = o.db_;
        s_ = o.s_;
        o.s_ = nullptr;
    }
    return *this;
}

Stmt::~Stmt() {
    if (s_) sqlite3_finalize(s_);
}

Stmt& Stmt::bind(int i, std::nullptr_t) {
    sqlite3_bind_null(s_, i);
    return *this;
}
Stmt& Stmt::bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
}
Stmt& Stmt::bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
}

Result<bool> Stmt::step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return std::unexpected(
        Error{fmt::format("sqlite: {}", sqlite3_errmsg(db_)), sqlite3_extended_errcode(db_)});
}

Result<void> Stmt::run() {
    for (;;) {
        auto r = step();
        if (!r) {
            reset();
            return std::unexpected(r.error());
        }
        if (!*r) break;
    }
    reset();
    return {};
}

void Stmt::reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
}

std::string Stmt::str(int col) const {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, col))) : std::string();
}

Db& Db::operator=(Db&& o) noexcept {
    if (this != &o) {
        if (db_) sqlite3_close_v2(db_);
        db_ = o.db_;
        deadline_ = std::move(o.deadline_);
        o.db_ = nullptr;
    }
    return *this;
}

Db::~Db() {
    if (db_) sqlite3_close_v2(db_);
}

Result<Db> Db::open(const std::string& path, bool readonly, bool create) {
    sqlite3* h = nullptr;
    // One connection is never used by two threads at once: no per-call mutex (multi-thread mode).
    int flags = (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX;
    if (!readonly && create) flags |= SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(path.c_str(), &h, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = h ? sqlite3_errmsg(h) : sqlite3_errstr(rc);
        int code = h ? sqlite3_extended_errcode(h) : rc;
        if (h) sqlite3_close_v2(h);
        return std::unexpected(Error{fmt::format("{}: cannot open store: {}", path, msg), code});
    }
    sqlite3_busy_timeout(h, 5000);
    sqlite3_extended_result_codes(h, 1);
    return Db(h);
}

void Db::setDeadline(std::chrono::steady_clock::time_point deadline) {
    if (!deadline_) deadline_ = std::make_unique<std::chrono::steady_clock::time_point>();
    *deadline_ = deadline;
    sqlite3_progress_handler(
        db_,
        10000,
        [](void* p) -> int {
            return std::chrono::steady_clock::now() >
                   *static_cast<std::chrono::steady_clock::time_point*>(p);
        },
        deadline_.get());
}

void Db::setInterrupt(const std::function<bool()>* stop) {
    if (!stop) {
        sqlite3_progress_handler(db_, 0, nullptr, nullptr);
        return;
    }
    sqlite3_progress_handler(
        db_,
        10000,
        [](void* p) -> int { return (*static_cast<const std::function<bool()>*>(p))() ? 1 : 0; },
        const_cast<std::function<bool()>*>(stop));
}

Result<Db> Db::openImmutable(const std::string& path) {
    std::string uri = "file:";
    for (unsigned char c : path) {
        if (c == '%' || c == '?' || c == '#' || c < 0x21 || c >= 0x7f)
            uri += fmt::format("%{:02X}", c);
        else
            uri += static_cast<char>(c);
    }
    uri += "?immutable=1";
    sqlite3* h = nullptr;
    int rc = sqlite3_open_v2(uri.c_str(), &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = h ? sqlite3_errmsg(h) : sqlite3_errstr(rc);
        int code = h ? sqlite3_extended_errcode(h) : rc;
        if (h) sqlite3_close_v2(h);
        return std::unexpected(Error{fmt::format("{}: cannot open store: {}", path, msg), code});
    }
    sqlite3_extended_result_codes(h, 1);
    return Db(h);
}

Result<Stmt> Db::prepare(std::string_view sql) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, nullptr);
    if (rc != SQLITE_OK)
        return std::unexpected(
            Error{fmt::format("sqlite: {}", sqlite3_errmsg(db_)), sqlite3_extended_errcode(db_)});
    return Stmt(db_, s);
}

Result<Stmt> Db::prepareOne(std::string_view sql) {
    sqlite3_stmt* s = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, &tail);
    if (rc != SQLITE_OK)
        return std::unexpected(
            Error{fmt::format("sqlite: {}", sqlite3_errmsg(db_)), sqlite3_extended_errcode(db_)});
    Stmt st(db_, s);
    if (!s) return std::unexpected(Error{"no SQL statement"});
    for (const char* p = tail; p && p < sql.data() + sql.size(); ++p) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ';') continue;
        return std::unexpected(
            Error{"one statement at a time (found more SQL after the first ';')"});
    }
    return st;
}

Result<void> Db::exec(std::string_view sql) {
    std::string s(sql);
    char* err = nullptr;
    if (int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err); rc != SQLITE_OK) {
        std::string msg = err ? err : "unknown error";
        sqlite3_free(err);
        return std::unexpected(
            Error{fmt::format("sqlite: {}", msg), sqlite3_extended_errcode(db_)});
    }
    return {};
}

}  // namespace gpufault::db
