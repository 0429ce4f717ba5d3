// Database: one SQLite connection (RAII over sqlite3*), opened with llmcap's pragmas.
//
// Pragmas on open (read-write connections): journal_mode=WAL (readers on other connections
// proceed while one writer commits), synchronous=NORMAL (durable at WAL checkpoints; a crash
// loses at most the last commits, never corrupts), foreign_keys=ON (ON DELETE CASCADE from jobs),
// and a busy timeout so concurrent writers wait instead of failing at once. ":memory:" gets the
// same pragmas (SQLite keeps journal_mode=memory there).
//
// Ownership: owns the connection; move-only. Statements prepared from it must not outlive it.
// Thread safety: a Database and its Statements may be used by ONE thread at a time (opened with
// SQLITE_OPEN_NOMUTEX); use one connection per thread, as SqliteJobStore and SampleWriter do.
// All calls block on SQLite I/O: never call them on an Asio I/O thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/statement.h"
#include "storage/status.h"

struct sqlite3;

namespace llmcap::storage {

struct DatabaseOptions {
  // How long a statement waits for another connection's write lock before failing with kBusy.
  int busy_timeout_ms = 5000;
  // Open with SQLITE_OPEN_READONLY (the file must exist); writes fail with kReadOnly.
  bool read_only = false;
};

// Maps a SQLite result code (primary or extended) to a Status: SQLITE_FULL → kDiskFull,
// SQLITE_READONLY → kReadOnly, SQLITE_CORRUPT/NOTADB → kCorrupt, SQLITE_BUSY/LOCKED → kBusy,
// SQLITE_IOERR/CANTOPEN/PROTOCOL → kIoError, SQLITE_CONSTRAINT → kConflict, anything else →
// kInvalid. The message is "<context>: <sqlite message>" (the connection's message when db is
// given and has one, else sqlite3_errstr). SQLITE_OK/ROW/DONE give an ok Status.
// For file errors the OS error of `db` decides and is appended ("disk I/O error (Read-only
// file system)"): EROFS → kReadOnly, ENOSPC/EDQUOT → kDiskFull, whatever SQLite's code was.
// When SQLite kept no errno for an I/O error, a scratch file created in the database's
// directory (and removed) tells the filesystem's state.
Status status_from_sqlite(int rc, sqlite3* db, std::string_view context);

class Database {
 public:
  // Opens (creating if needed, unless read_only) the file at `path`, or ":memory:".
  // Fails with kIoError (cannot open), kCorrupt (not a database), kReadOnly, kBusy.
  static Result<Database> open(const std::string& path, const DatabaseOptions& options = {});

  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more ';'-separated statements that return no rows of interest.
  Status exec(std::string_view sql);
  // Compiles one statement. Fails with kInvalid on bad SQL (message names the problem).
  Result<Statement> prepare(std::string_view sql);

  std::int64_t last_insert_rowid() const;
  int changes() const;  // rows changed by the last INSERT/UPDATE/DELETE
  bool in_transaction() const;
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  void close();

  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace llmcap::storage
