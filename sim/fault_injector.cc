#include "sim/fault_injector.h"

#include <random>

namespace llmcap::sim {

std::string_view to_string(FaultKind kind) {
  switch (kind) {
    case FaultKind::kNone: return "none";
    case FaultKind::kServerError: return "server_error";
    case FaultKind::kRateLimited: return "rate_limited";
    case FaultKind::kStall: return "stall";
    case FaultKind::kReset: return "reset";
    case FaultKind::kMalformed: return "malformed";
  }
  return "none";
}

FaultInjector::FaultInjector(FaultOptions options, std::uint64_t seed)
    : options_(options), seed_(seed) {}

FaultDecision FaultInjector::decide(std::uint64_t request_index) const {
  FaultDecision d;
  if (!options_.any()) return d;
  // A fresh generator per request keyed by (seed, index): order-independent and replayable.
  std::seed_seq seq{static_cast<std::uint32_t>(seed_), static_cast<std::uint32_t>(seed_ >> 32),
                    static_cast<std::uint32_t>(request_index),
                    static_cast<std::uint32_t>(request_index >> 32), 0x5eedfa17u};
  std::mt19937_64 rng(seq);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  if (unit(rng) < options_.slow_headers_rate) d.slow_headers_ms = options_.slow_headers_ms;
  double u = unit(rng);
  const struct {
    double rate;
    FaultKind kind;
    std::int64_t after;
  } table[] = {
      {options_.error_rate, FaultKind::kServerError, 0},
      {options_.rate_limit_rate, FaultKind::kRateLimited, 0},
      {options_.stall_rate, FaultKind::kStall, options_.stall_after_tokens},
      {options_.reset_rate, FaultKind::kReset, options_.reset_after_tokens},
      {options_.malformed_rate, FaultKind::kMalformed, options_.malformed_after_tokens},
  };
  for (const auto& row : table) {
    if (u < row.rate) {
      d.kind = row.kind;
      d.after_tokens = row.after;
      return d;
    }
    u -= row.rate;
  }
  return d;
}

}  // namespace llmcap::sim
