#include "storage/database.h"

#include <sqlite3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

namespace llmcap::storage {

namespace {

// The OS error behind a failed file operation of `db` (0 when none or not a file error).
// SQLite reports a write on a filesystem that went read-only as SQLITE_IOERR_WRITE
// ("disk I/O error"); its errno (EROFS, ENOSPC, EIO) is what tells the operator what happened.
// SQLite often loses the errno of a failed write (sqlite3_system_errno() is 0 after a
// SQLITE_IOERR_WRITE on a filesystem that went read-only), so then the database's directory is
// probed with a create + one-byte write of a scratch file: its errno is the filesystem's state
// now (EROFS, ENOSPC, EIO). Runs only on an I/O error, never on the normal path.
int probe_directory(sqlite3* db) {
  const char* file = sqlite3_db_filename(db, "main");
  if (file == nullptr || *file == '\0') return 0;  // in-memory or temporary database
  std::string dir(file);
  const auto slash = dir.rfind('/');
  dir = slash == std::string::npos ? std::string(".") : dir.substr(0, slash + 1);
  const std::string probe = dir + "/.llmcap-write-probe-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno == EEXIST ? 0 : errno;
  int err = 0;
  if (::write(fd, "x", 1) != 1) err = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  return err;
}

int os_errno(int rc, sqlite3* db) {
  if (db == nullptr) return 0;
  switch (rc & 0xff) {
    case SQLITE_IOERR: {
      const int err = sqlite3_system_errno(db);
      return err != 0 ? err : probe_directory(db);
    }
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY: return sqlite3_system_errno(db);
    default: return 0;
  }
}

std::string with_os_error(std::string message, int err) {
  if (err == 0) return message;
  return message + " (" + std::strerror(err) + ")";
}

}  // namespace

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
  const int err = os_errno(rc, db);
  if (err == EROFS) code = ErrorCode::kReadOnly;
  if (err == ENOSPC || err == EDQUOT) code = ErrorCode::kDiskFull;
  std::string message(context);
  if (!message.empty()) message += ": ";
  if (db != nullptr && sqlite3_errcode(db) != SQLITE_OK) {
    message += sqlite3_errmsg(db);
  } else {
    message += sqlite3_errstr(rc);
  }
  return Status(code, with_os_error(std::move(message), err));
}

Result<Database> Database::open(const std::string& path, const DatabaseOptions& options) {
  int flags = SQLITE_OPEN_NOMUTEX;
  flags |= options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  const bool on_disk = !path.empty() && path != ":memory:" && path.rfind("file:", 0) != 0;
  std::error_code exists_ec;
  const bool created = on_disk && !options.read_only && !std::filesystem::exists(path, exists_ec);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  // Even on failure SQLite usually hands back a handle that must be closed; Database owns it.
  Database db(raw, path);
  if (rc != SQLITE_OK) {
    return status_from_sqlite(rc, raw, "open " + path);
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  // The database holds target secrets while jobs run: a new file is readable by its owner only
  // (SQLite gives its -wal and -shm files the same mode).
  if (created) ::chmod(path.c_str(), 0600);
  // The first statement reads the header: a non-database file fails here with kCorrupt.
  if (!options.read_only) {
    if (Status s = db.exec("PRAGMA journal_mode=WAL"); !s.ok()) return s;
    if (Status s = db.exec("PRAGMA synchronous=NORMAL"); !s.ok()) return s;
  } else {
    if (Status s = db.exec("SELECT count(*) FROM sqlite_schema"); !s.ok()) return s;
  }
  if (Status s = db.exec("PRAGMA foreign_keys=ON"); !s.ok()) return s;
  // Deleted rows (secrets of finished jobs, deleted jobs) are overwritten, not left in free
  // pages.
  if (!options.read_only) {
    if (Status s = db.exec("PRAGMA secure_delete=ON"); !s.ok()) return s;
  }
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
    Status mapped = status_from_sqlite(rc, db_, "");
    return Status(mapped.code(), with_os_error(std::move(message), os_errno(rc, db_)));
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
