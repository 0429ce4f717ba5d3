#include "storage/database.h"

#include <sqlite3.h>

#include <utility>

namespace llmcap::storage {

Status status_from_sqlite(int rc, sqlite3* db, std::string_view context) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return Status();
  ErrorCode code = ErrorCode::kInvalid;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: code = ErrorCode::kBusy; break;
    case SQLITE_READONLY: code = ErrorCode::kReadOnly; break;
    case SQLITE_FULL: code = ErrorCode::kDiskFull; break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: code = ErrorCode::kCorrupt; break;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
    case SQLITE_NOLFS: code = ErrorCode::kIoError; break;
    case SQLITE_CONSTRAINT: code = ErrorCode::kConflict; break;
    default: code = ErrorCode::kInvalid; break;
  }
  std::string message(context);
  if (!message.empty()) message += ": ";
  if (db != nullptr && sqlite3_errcode(db) != SQLITE_OK) {
    message += sqlite3_errmsg(db);
  } else {
    message += sqlite3_errstr(rc);
  }
  return Status(code, std::move(message));
}

Result<Database> Database::open(const std::string& path, const DatabaseOptions& options) {
  int flags = SQLITE_OPEN_NOMUTEX;
  flags |= options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  // Even on failure SQLite usually hands back a handle that must be closed; Database owns it.
  Database db(raw, path);
  if (rc != SQLITE_OK) {
    return status_from_sqlite(rc, raw, "open " + path);
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  // The first statement reads the header: a non-database file fails here with kCorrupt.
  if (!options.read_only) {
    if (Status s = db.exec("PRAGMA journal_mode=WAL"); !s.ok()) return s;
    if (Status s = db.exec("PRAGMA synchronous=NORMAL"); !s.ok()) return s;
  } else {
    if (Status s = db.exec("SELECT count(*) FROM sqlite_schema"); !s.ok()) return s;
  }
  if (Status s = db.exec("PRAGMA foreign_keys=ON"); !s.ok()) return s;
  return db;
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    close();
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Database::~Database() { close(); }

void Database::close() {
  if (db_ != nullptr) {
    // sqlite3_close_v2 defers the close until outstanding statements are finalized, so a
    // statement leaked past its Database cannot make this fail.
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }
}

Status Database::exec(std::string_view sql) {
  const std::string text(sql);
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = error != nullptr ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    Status mapped = status_from_sqlite(rc, nullptr, "");
    return Status(mapped.code(), std::move(message));
  }
  return Status();
}

Result<Statement> Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return status_from_sqlite(rc, db_, "prepare");
  }
  if (stmt == nullptr) return Status(ErrorCode::kInvalid, "prepare: empty SQL statement");
  return Statement(db_, stmt);
}

std::int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
int Database::changes() const { return sqlite3_changes(db_); }
bool Database::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

}  // namespace llmcap::storage
