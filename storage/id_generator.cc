#include "storage/id_generator.h"

#include <algorithm>
#include <chrono>

#include "storage/system_clock.h"

namespace llmcap::storage {
namespace {

constexpr std::string_view kCrockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

}  // namespace

IdGenerator::IdGenerator(std::function<std::int64_t()> now_ms, std::optional<std::uint64_t> seed)
    : now_ms_(now_ms ? std::move(now_ms) : std::function<std::int64_t()>(system_now_ms)) {
  if (seed.has_value()) {
    rng_.seed(*seed);
  } else {
    std::random_device device;
    rng_.seed((static_cast<std::uint64_t>(device()) << 32) ^ device());
  }
}

std::string IdGenerator::next(std::string_view prefix) {
  std::int64_t ms = 0;
  std::array<std::uint8_t, 10> random{};
  {
    std::lock_guard lock(mutex_);
    ms = std::max<std::int64_t>(now_ms_(), 0);
    if (ms <= last_ms_) {
      // Same (or earlier) millisecond: keep the time, increment the random part so the id
      // still sorts after the previous one.
      ms = last_ms_;
      random = last_random_;
      for (int i = 9; i >= 0; --i) {
        if (++random[static_cast<std::size_t>(i)] != 0) break;
      }
    } else {
      for (auto& byte : random) byte = static_cast<std::uint8_t>(rng_());
      // Leave headroom so increments within one millisecond never wrap around.
      random[0] &= 0x7f;
    }
    last_ms_ = ms;
    last_random_ = random;
  }
  // 128 bits: 48 of time then 80 of randomness, written as 26 base32 digits (130 bits, top 2 = 0).
  std::array<std::uint8_t, 16> bytes{};
  const auto time = static_cast<std::uint64_t>(ms);
  for (int i = 0; i < 6; ++i) {
    bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(time >> (8 * (5 - i)));
  }
  for (std::size_t i = 0; i < 10; ++i) bytes[6 + i] = random[i];
  std::string out(prefix);
  out += '_';
  char digits[26];
  // Read 5 bits at a time from the right end of the 130-bit number (2 zero bits on top).
  for (int d = 25; d >= 0; --d) {
    const int bit = (25 - d) * 5;  // position of this digit's lowest bit, from the right
    int value = 0;
    for (int b = 0; b < 5; ++b) {
      const int pos = bit + b;  // bit index from the right in the 128-bit number
      if (pos >= 128) continue;
      const std::size_t byte = 15 - static_cast<std::size_t>(pos / 8);
      if ((bytes[byte] >> (pos % 8)) & 1) value |= 1 << b;
    }
    digits[d] = kCrockford[static_cast<std::size_t>(value)];
  }
  out.append(digits, 26);
  return out;
}

bool IdGenerator::well_formed(std::string_view id, std::string_view prefix) {
  if (id.size() != prefix.size() + 1 + 26) return false;
  if (!id.starts_with(prefix) || id[prefix.size()] != '_') return false;
  for (char c : id.substr(prefix.size() + 1)) {
    if (kCrockford.find(c) == std::string_view::npos) return false;
  }
  return true;
}

}  // namespace llmcap::storage
