// The system clock in Unix milliseconds: the default `now_ms` of IdGenerator, Migrator and
// SqliteJobStore (each takes another one in tests).
#pragma once

#include <chrono>
#include <cstdint>

namespace llmcap::storage {

inline std::int64_t system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace llmcap::storage
