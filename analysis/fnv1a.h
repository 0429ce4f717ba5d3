// FNV-1a hashes: stable across runs, machines and versions (unlike std::hash), for content
// fingerprints (workload_fingerprint, Idempotency-Key request hashes), the simulator's token ids
// and short name suffixes.
//
// The 64-bit offset basis below is 1469598103934665603, not FNV's published
// 14695981039346656037 (a digit was lost when the first version was written). It is kept:
// workload fingerprints stored by earlier versions must keep matching, and the hash's
// distribution does not depend on the basis.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace llmcap::analysis {

constexpr std::uint64_t fnv1a_64(std::string_view s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

constexpr std::uint32_t fnv1a_32(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

// fnv1a_64 as 16 lower-case hex digits.
inline std::string fnv1a_64_hex(std::string_view s) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a_64(s)));
  return buf;
}

}  // namespace llmcap::analysis
