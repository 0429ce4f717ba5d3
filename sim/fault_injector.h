// FaultInjector: decides, per request and reproducibly from a seed, which misbehaviour the
// simulator shows (for testing clients and the load generator): HTTP 500, HTTP 429
// with Retry-After, a stall after N tokens (stop sending, keep the connection), a TCP reset
// after N tokens, a malformed chunk after N tokens, and slow headers (a delay before the status
// line). Each decision depends only on (seed, request index), so a test replays exactly.
// Thread safety: immutable after construction; decide() is safe from any thread.
#pragma once

#include <cstdint>
#include <string>

namespace llmcap::sim {

struct FaultOptions {
  double error_rate = 0;                // fraction of requests answered with HTTP 500
  double rate_limit_rate = 0;           // fraction answered with HTTP 429
  std::int64_t retry_after_s = 1;       // Retry-After value sent with 429
  double stall_rate = 0;                // fraction of streams that stall
  std::int64_t stall_after_tokens = 8;  // tokens sent before the stall
  std::int64_t stall_ms = 600'000;  // how long a stalled stream holds the connection, then resets
  double reset_rate = 0;            // fraction of streams reset (TCP RST)
  std::int64_t reset_after_tokens = 8;
  double malformed_rate = 0;  // fraction of streams that get a malformed chunk
  std::int64_t malformed_after_tokens = 8;
  double slow_headers_rate = 0;  // fraction of requests whose headers are delayed
  std::int64_t slow_headers_ms = 2000;

  bool any() const {
    return error_rate > 0 || rate_limit_rate > 0 || stall_rate > 0 || reset_rate > 0 ||
           malformed_rate > 0 || slow_headers_rate > 0;
  }
};

enum class FaultKind { kNone, kServerError, kRateLimited, kStall, kReset, kMalformed };

std::string_view to_string(FaultKind kind);

struct FaultDecision {
  FaultKind kind = FaultKind::kNone;
  std::int64_t after_tokens = 0;     // for stall / reset / malformed
  std::int64_t slow_headers_ms = 0;  // 0 = no delay; combines with any kind
};

class FaultInjector {
 public:
  FaultInjector(FaultOptions options, std::uint64_t seed);
  // The faults for the request_index-th request (0-based arrival order). The five kinds are
  // mutually exclusive, drawn in the order listed in FaultOptions; slow headers is independent.
  FaultDecision decide(std::uint64_t request_index) const;
  const FaultOptions& options() const { return options_; }

 private:
  FaultOptions options_;
  std::uint64_t seed_;
};

}  // namespace llmcap::sim
