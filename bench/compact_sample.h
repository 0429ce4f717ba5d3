// CompactSample: a 64-byte in-memory form of analysis::RequestSample (issue 10 target: ≤ 64
// bytes per stored request sample before it is written). A prototype measured in
// bench_micro, not yet used by agent/ or storage/ (bench/RESULTS.md, "Sample memory").
//
// Layout: t_intended_ns stays exact (int64 ns); every other stamp is an int32 offset from it
// in microseconds (±35 min, beyond the 600 s total deadline; -1 µs offsets are impossible for
// real stamps, so INT32_MIN marks "absent" and keeps the -1 sentinel of RequestSample).
// index is implied by the position in the step's sample vector (samples are sorted by index),
// error_message moves to a sparse side table (only failed requests have one), per-token
// times are excluded as the target says. Cost: µs resolution on durations — the verdicts'
// tolerances (docs/metrics.md §4) are ≥ 1 ms, so 1 µs is 1000× finer than any judgement made
// on them.
// A plain value; thread-safe to read.
#pragma once

#include <cstdint>
#include <limits>

#include "analysis/request_sample.h"

namespace llmcap::bench {

struct CompactSample {
  static constexpr std::int32_t kAbsent = std::numeric_limits<std::int32_t>::min();

  std::int64_t t_intended_ns = 0;
  std::int32_t send_us = kAbsent;     // t_send − t_intended
  std::int32_t connect_us = kAbsent;  // durations, as RequestSample
  std::int32_t tls_us = kAbsent;
  std::int32_t headers_us = kAbsent;      // t_headers − t_intended
  std::int32_t first_token_us = kAbsent;  // t_first_token − t_intended
  std::int32_t last_token_us = kAbsent;
  std::int32_t end_us = kAbsent;
  std::int32_t max_itl_us = kAbsent;
  std::uint32_t token_events = 0;
  std::int32_t input_tokens = -1;
  std::int32_t output_tokens = -1;
  std::int32_t planned_input_tokens = -1;
  std::int32_t planned_output_tokens = -1;
  std::int16_t http_status = 0;
  std::uint8_t error = 0;   // analysis::ErrorClass
  std::uint8_t finish = 0;  // analysis::FinishReason in bits 0–6; bit 7 = output estimated

  static CompactSample from(const analysis::RequestSample& s);
  // Back to a RequestSample (index given; error_message from the side table, if any).
  analysis::RequestSample to_sample(std::uint64_t index) const;
};
static_assert(sizeof(CompactSample) == 64, "CompactSample must stay 64 bytes");

}  // namespace llmcap::bench
