// A thin RAII layer over the SQLite C API: prepared statements with bound parameters only.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gpufault::db {

/// An error from SQLite or from the store, with a message fit for a user. `code`: SQLite's
/// extended result code (sqlite3_extended_errcode: SQLITE_BUSY_SNAPSHOT, SQLITE_IOERR_WRITE, …)
/// when SQLite reported the error, else 0 (an error of the store's own). Decide on the code,
/// never on the message text.
struct Error {
    std::string message;
    int code = 0;
    /// SQLite's primary result code (SQLITE_BUSY, SQLITE_FULL, SQLITE_IOERR, …); 0 when none.
    int primary() const { return code & 0xff; }
    /// Another connection held the lock the statement needed (SQLITE_BUSY).
    bool busy() const { return primary() == SQLITE_BUSY; }
    /// The store's own trouble, which may pass (busy, locked, full, an I/O error, read-only):
    /// the same write may succeed later (gpufaultd reads such a core again).
    bool transient() const {
        const int c = primary();
        return c == SQLITE_BUSY || c == SQLITE_LOCKED || c == SQLITE_FULL || c == SQLITE_IOERR ||
               c == SQLITE_READONLY;
    }
};

template <typename T>
using Result = std::expected<T, Error>;

/// One prepared statement. Bind with 1-based indexes; `step()` returns true while a row is ready.
class Stmt {
  public:
    Stmt() = default;
    Stmt(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
    Stmt(Stmt&& o) noexcept : db_(o.db_), s_(o.s_) { o.s_ = nullptr; }
    Stmt& operator=(Stmt&& o) noexcept;
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;
    ~Stmt();

    Stmt& bind(int i, std::nullptr_t);
    Stmt& bind(int i, int64_t v);
    Stmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
    Stmt& bind(int i, uint64_t v) { return bind(i, static_cast<int64_t>(v)); }
    Stmt& bind(int i, double v);
    Stmt& bind(int i, std::string_view v);
    Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
    Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
    template <typename T>
    Stmt& bind(int i, const std::optional<T>& v) {
        return v ? bind(i, *v) : bind(i, nullptr);
    }
    Stmt& bind(int i, const std::optional<bool>& v) {
        return v ? bind(i, static_cast<int64_t>(*v)) : bind(i, nullptr);
    }

    /// Runs one step: true = a row is ready, false = done. Errors carry SQLite's message.
    Result<bool> step();
    /// Steps to completion (for statements without rows) and resets for reuse.
    Result<void> run();
    void reset();

    bool isNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
    int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }
    double f64(int col) const { return sqlite3_column_double(s_, col); }
    std::string str(int col) const;
    std::optional<int64_t> optI64(int col) const {
        return isNull(col) ? std::nullopt : std::optional<int64_t>(i64(col));
    }
    std::optional<std::string> optStr(int col) const {
        return isNull(col) ? std::nullopt : std::optional<std::string>(str(col));
    }
    int columns() const { return sqlite3_column_count(s_); }
    /// True when the statement makes no direct change to the database file.
    bool readonly() const { return sqlite3_stmt_readonly(s_) != 0; }
    const char* columnName(int col) const { return sqlite3_column_name(s_, col); }
    int columnType(int col) const { return sqlite3_column_type(s_, col); }

  private:
    sqlite3* db_ = nullptr;
    sqlite3_stmt* s_ = nullptr;
};

/// One connection. Read-only connections use SQLITE_OPEN_READONLY.
class Db {
  public:
    Db() = default;
    Db(Db&& o) noexcept : db_(o.db_), deadline_(std::move(o.deadline_)) { o.db_ = nullptr; }
    Db& operator=(Db&& o) noexcept;
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;
    ~Db();

    /// Opens `path`; `create` makes the file when missing. Sets a 5 s busy timeout.
    static Result<Db> open(const std::string& path, bool readonly, bool create);
    /// Opens `path` read-only as immutable (no locks, no -shm/-wal): for readers that cannot
    /// write the store's directory. Changes made after opening are not seen.
    static Result<Db> openImmutable(const std::string& path);
    /// Prepares a statement (parameters bound later).
    Result<Stmt> prepare(std::string_view sql);
    /// Prepares exactly one statement: trailing SQL after it is an error.
    Result<Stmt> prepareOne(std::string_view sql);
    /// Runs SQL without parameters (schema scripts, pragmas, BEGIN/COMMIT).
    Result<void> exec(std::string_view sql);
    sqlite3* handle() const { return db_; }
    /// Interrupts statements that run past `deadline` (checked every 10 000 VM steps).
    void setDeadline(std::chrono::steady_clock::time_point deadline);
    /// Interrupts statements (SQLITE_INTERRUPT, an error) when `*stop` returns true, asked
    /// every 10 000 VM steps; nullptr removes it (and a deadline). `*stop` must outlive it.
    void setInterrupt(const std::function<bool()>* stop);
    int64_t lastInsertId() const { return sqlite3_last_insert_rowid(db_); }
    int changes() const { return sqlite3_changes(db_); }

  private:
    explicit Db(sqlite3* db) : db_(db) {}
    sqlite3* db_ = nullptr;
    /// On the heap so the progress handler's pointer survives moves of the Db.
    std::unique_ptr<std::chrono::steady_clock::time_point> deadline_;
};

}  // namespace gpufault::db
