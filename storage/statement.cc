#include "storage/statement.h"

#include <sqlite3.h>

#include <utility>

#include "storage/database.h"

namespace llmcap::storage {

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      bind_error_(std::move(other.bind_error_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_error_ = std::move(other.bind_error_);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::remember(Status status) {
  if (bind_error_.ok()) bind_error_ = std::move(status);
}

Statement& Statement::check_bind(int rc, int index) {
  if (rc != SQLITE_OK) {
    remember(status_from_sqlite(rc, db_, "bind parameter " + std::to_string(index)));
  }
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  return check_bind(sqlite3_bind_int64(stmt_, index, value), index);
}

Statement& Statement::bind(int index, double value) {
  return check_bind(sqlite3_bind_double(stmt_, index, value), index);
}

Statement& Statement::bind(int index, std::string_view text) {
  return check_bind(
      sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
}

Statement& Statement::bind(int index, std::nullptr_t) {
  return check_bind(sqlite3_bind_null(stmt_, index), index);
}

Statement& Statement::bind_blob(int index, std::span<const std::byte> bytes) {
  if (bytes.empty()) {
    return check_bind(sqlite3_bind_zeroblob(stmt_, index, 0), index);
  }
  return check_bind(sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT),
                    index);
}

int Statement::index_of(std::string_view name) const {
  const std::string text(name);
  return sqlite3_bind_parameter_index(stmt_, text.c_str());
}

Result<bool> Statement::step() {
  if (!bind_error_.ok()) return bind_error_;
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Status status = status_from_sqlite(rc, db_, "step");
  // Leave the statement reusable after a failure (reset returns the same error; ignore it).
  sqlite3_reset(stmt_);
  return status;
}

Status Statement::run() {
  for (;;) {
    Result<bool> row = step();
    if (!row.ok()) return row.status();
    if (!row.value()) return Status();
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_ = Status();
}

int Statement::column_count() const { return sqlite3_column_count(stmt_); }

bool Statement::column_is_null(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

std::int64_t Statement::column_int64(int col) const { return sqlite3_column_int64(stmt_, col); }

double Statement::column_double(int col) const { return sqlite3_column_double(stmt_, col); }

std::string Statement::column_text(int col) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (text == nullptr) return {};
  return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::optional<std::string> Statement::column_optional_text(int col) const {
  if (column_is_null(col)) return std::nullopt;
  return column_text(col);
}

std::optional<std::int64_t> Statement::column_optional_int64(int col) const {
  if (column_is_null(col)) return std::nullopt;
  return column_int64(col);
}

std::optional<double> Statement::column_optional_double(int col) const {
  if (column_is_null(col)) return std::nullopt;
  return column_double(col);
}

std::span<const std::byte> Statement::column_blob(int col) const {
  const void* data = sqlite3_column_blob(stmt_, col);
  const int size = sqlite3_column_bytes(stmt_, col);
  if (data == nullptr || size <= 0) return {};
  return {static_cast<const std::byte*>(data), static_cast<std::size_t>(size)};
}

}  // namespace llmcap::storage
