// Builders of synthetic RequestSamples for analysis/ unit tests (header-only, tests only).
#pragma once

#include <cstdint>

#include "analysis/request_sample.h"

namespace llmcap::analysis::testing {

inline constexpr std::int64_t kMs = 1'000'000;
inline constexpr std::int64_t kSec = 1'000'000'000;

// A successful streamed request: sent send_lag after t_intended, first token ttft_service
// after the send, then output_tokens − 1 further tokens tpot apart (one token per event).
inline RequestSample ok_sample(std::uint64_t index, std::int64_t t_intended_ns,
                               std::int64_t ttft_service_ns, std::int32_t output_tokens = 101,
                               std::int64_t tpot_ns = 10 * kMs,
                               std::int64_t send_lag_ns = 1 * kMs) {
  RequestSample s;
  s.index = index;
  s.t_intended_ns = t_intended_ns;
  s.t_send_ns = t_intended_ns + send_lag_ns;
  s.t_headers_ns = s.t_send_ns + ttft_service_ns / 2;
  s.t_first_token_ns = s.t_send_ns + ttft_service_ns;
  s.t_last_token_ns = s.t_first_token_ns + (output_tokens - 1) * tpot_ns;
  s.t_end_ns = s.t_last_token_ns;
  s.token_events = static_cast<std::uint32_t>(output_tokens);
  s.input_tokens = 100;
  s.output_tokens = output_tokens;
  s.planned_input_tokens = 100;
  s.planned_output_tokens = output_tokens;
  s.max_itl_ns = output_tokens >= 2 ? tpot_ns : -1;
  s.http_status = 200;
  s.finish_reason = FinishReason::kLength;
  return s;
}

// A request that failed with `error` after `after_ns` (no tokens).
inline RequestSample failed_sample(std::uint64_t index, std::int64_t t_intended_ns,
                                   ErrorClass error, std::int64_t after_ns = 100 * kMs) {
  RequestSample s;
  s.index = index;
  s.t_intended_ns = t_intended_ns;
  s.t_send_ns = t_intended_ns + kMs;
  s.t_end_ns = s.t_send_ns + after_ns;
  s.error = error;
  s.http_status = error == ErrorClass::kHttp5xx ? 500 : 0;
  return s;
}

}  // namespace llmcap::analysis::testing
