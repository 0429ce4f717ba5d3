// Expected<T>: a value or an error message, for expected failures in agent/.
// A plain value type; not thread-safe beyond what T is.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace llmcap::agent {

template <class T>
class Expected {
 public:
  Expected(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  static Expected failure(std::string error) {
    Expected e;
    e.error_ = std::move(error);
    return e;
  }
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }
  const T& operator*() const { return *value_; }
  // Human-readable reason, naming the field or line that was wrong. Empty when ok().
  const std::string& error() const { return error_; }

 private:
  Expected() = default;
  std::optional<T> value_;
  std::string error_;
};

}  // namespace llmcap::agent
