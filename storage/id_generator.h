// IdGenerator: makes sortable ids such as "job_01HGW2B5Q8N3T7XK9PZC4VDR6M" (ULID layout: 48-bit
// unix milliseconds + 80 random bits, Crockford base32, 26 characters after the prefix).
//
// Ids made by one generator sort (as strings) in the order they were made, even within one
// millisecond or if the clock steps back: like monotonic ULIDs, the time never goes below the
// last one used and the random part is incremented instead of redrawn within a millisecond.
// Clock and seed are injectable so tests are deterministic.
//
// Thread safety: next() may be called from any thread (internally locked).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace llmcap::storage {

class IdGenerator {
 public:
  // now_ms: unix milliseconds (defaults to the system clock); seed: for the random part
  // (defaults to std::random_device).
  explicit IdGenerator(std::function<std::int64_t()> now_ms = nullptr,
                       std::optional<std::uint64_t> seed = std::nullopt);

  // prefix + "_" + 26 characters, e.g. next("job").
  std::string next(std::string_view prefix);

  // True when `id` is prefix + "_" + 26 Crockford base32 characters.
  static bool well_formed(std::string_view id, std::string_view prefix);

 private:
  std::function<std::int64_t()> now_ms_;
  std::mutex mutex_;
  std::mt19937_64 rng_;                         // guarded by mutex_
  std::int64_t last_ms_ = -1;                   // guarded by mutex_
  std::array<std::uint8_t, 10> last_random_{};  // guarded by mutex_
};

}  // namespace llmcap::storage
