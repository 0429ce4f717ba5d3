// Statement: one prepared SQLite statement (RAII over sqlite3_stmt*).
//
// Binding is chainable: `st.bind(1, id).bind(":name", name);` — a bind error (unknown name,
// index out of range) is remembered and returned by the next step()/run(), so call sites stay
// flat. Text and blobs are copied at bind time (SQLITE_TRANSIENT): arguments may be temporaries.
//
// Ownership: owns the statement; move-only; must not outlive the Database it came from.
// Thread safety: same as its Database — one thread at a time.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "storage/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace llmcap::storage {

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Bind by 1-based index.
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, std::nullptr_t);
  Statement& bind_blob(int index, std::span<const std::byte> bytes);
  template <std::integral I>
  Statement& bind(int index, I value) {
    return bind(index, static_cast<std::int64_t>(value));
  }
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    if (value.has_value()) return bind(index, *value);
    return bind(index, nullptr);
  }
  // Bind by name, including its prefix (":job_id"). An unknown name is an error at step().
  template <typename V>
  Statement& bind(std::string_view name, V&& value) {
    const int index = index_of(name);
    if (index == 0) {
      remember(Status(ErrorCode::kInvalid, "unknown SQL parameter " + std::string(name)));
      return *this;
    }
    return bind(index, std::forward<V>(value));
  }

  // Advances: true when a row is available, false when done. Fails with the mapped SQLite
  // error (kDiskFull, kConflict for constraint violations, ...) or a remembered bind error.
  Result<bool> step();
  // Steps to completion, ignoring rows (INSERT/UPDATE/DELETE).
  Status run();
  // Ready to run again; also clears bindings and any remembered bind error.
  void reset();

  int column_count() const;
  bool column_is_null(int col) const;  // 0-based column index
  std::int64_t column_int64(int col) const;
  double column_double(int col) const;
  std::string column_text(int col) const;  // "" for NULL
  std::optional<std::string> column_optional_text(int col) const;
  std::optional<std::int64_t> column_optional_int64(int col) const;
  std::optional<double> column_optional_double(int col) const;
  std::span<const std::byte> column_blob(int col) const;  // valid until the next step/reset

 private:
  int index_of(std::string_view name) const;
  void remember(Status status);
  Statement& check_bind(int rc, int index);

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  Status bind_error_;  // first bind failure since the last reset
};

}  // namespace llmcap::storage
