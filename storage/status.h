// Status / Result<T>: how storage reports expected failures without exceptions.
//
// A Status is a code plus a human message (for SQLite failures the message carries sqlite's own
// text, e.g. "database or disk is full"). Result<T> holds either a value or a non-ok Status.
// Plain values: copyable, no shared state, safe to pass between threads.
//
// When you add an ErrorCode value, add it to to_string() in status.cc and to the one place that
// maps storage errors to HTTP (server/, owned by the lead) in the same change.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace llmcap::storage {

enum class ErrorCode {
  kOk = 0,
  kNotFound,      // the row asked for does not exist
  kConflict,      // state transition not allowed, idempotency key reused with another request,
                  // unique constraint violated, delete of an unfinished job
  kBusy,          // SQLITE_BUSY / SQLITE_LOCKED after the busy timeout
  kIoError,       // SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_PROTOCOL and other I/O failures
  kReadOnly,      // SQLITE_READONLY, or a write attempted under PRAGMA query_only
  kDiskFull,      // SQLITE_FULL (disk full or max_page_count reached)
  kCorrupt,       // SQLITE_CORRUPT / SQLITE_NOTADB
  kSchemaTooNew,  // the database was migrated by a newer llmcapd than this one
  kInvalid,       // bad argument (malformed migration list, bad cursor, bad SQL, ...)
};

std::string_view to_string(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "conflict: job job_01H... is running" — for logs and error bodies.
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// Either a T or a non-ok Status. Accessing value() of a failed Result is a broken invariant
// (asserts in debug builds).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!status_.ok() && "Result built from an ok Status without a value");
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Status& status() const { return status_; }
  ErrorCode code() const { return status_.code(); }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace llmcap::storage
