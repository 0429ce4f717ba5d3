#include "bench/compact_sample.h"

#include <cmath>

namespace llmcap::bench {

namespace {
// Nearest µs, saturating; kAbsent for the -1 "absent" sentinel.
std::int32_t to_us(std::int64_t ns, bool absent) {
  if (absent) return CompactSample::kAbsent;
  const std::int64_t us = (ns >= 0 ? ns + 500 : ns - 500) / 1000;
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  constexpr std::int64_t kMin = CompactSample::kAbsent + 1;
  return static_cast<std::int32_t>(us > kMax ? kMax : us < kMin ? kMin : us);
}
std::int64_t to_ns(std::int32_t us) {
  return us == CompactSample::kAbsent ? -1 : std::int64_t{us} * 1000;
}
std::int32_t stamp(std::int64_t t_ns, std::int64_t base_ns) {
  return to_us(t_ns - base_ns, t_ns < 0);
}
std::int64_t unstamp(std::int32_t us, std::int64_t base_ns) {
  return us == CompactSample::kAbsent ? -1 : base_ns + std::int64_t{us} * 1000;
}
}  // namespace

CompactSample CompactSample::from(const analysis::RequestSample& s) {
  CompactSample c;
  c.t_intended_ns = s.t_intended_ns;
  c.send_us = stamp(s.t_send_ns, s.t_intended_ns);
  c.connect_us = to_us(s.connect_ns, s.connect_ns < 0);
  c.tls_us = to_us(s.tls_ns, s.tls_ns < 0);
  c.headers_us = stamp(s.t_headers_ns, s.t_intended_ns);
  c.first_token_us = stamp(s.t_first_token_ns, s.t_intended_ns);
  c.last_token_us = stamp(s.t_last_token_ns, s.t_intended_ns);
  c.end_us = stamp(s.t_end_ns, s.t_intended_ns);
  c.max_itl_us = to_us(s.max_itl_ns, s.max_itl_ns < 0);
  c.token_events = s.token_events;
  c.input_tokens = s.input_tokens;
  c.output_tokens = s.output_tokens;
  c.planned_input_tokens = s.planned_input_tokens;
  c.planned_output_tokens = s.planned_output_tokens;
  c.http_status = s.http_status;
  c.error = static_cast<std::uint8_t>(s.error);
  c.finish = static_cast<std::uint8_t>(static_cast<std::uint8_t>(s.finish_reason) |
                                       (s.output_tokens_estimated ? 0x80 : 0));
  return c;
}

analysis::RequestSample CompactSample::to_sample(std::uint64_t index) const {
  analysis::RequestSample s;
  s.index = index;
  s.t_intended_ns = t_intended_ns;
  s.t_send_ns = unstamp(send_us, t_intended_ns);
  s.connect_ns = to_ns(connect_us);
  s.tls_ns = to_ns(tls_us);
  s.t_headers_ns = unstamp(headers_us, t_intended_ns);
  s.t_first_token_ns = unstamp(first_token_us, t_intended_ns);
  s.t_last_token_ns = unstamp(last_token_us, t_intended_ns);
  s.t_end_ns = unstamp(end_us, t_intended_ns);
  s.max_itl_ns = to_ns(max_itl_us);
  s.token_events = token_events;
  s.input_tokens = input_tokens;
  s.output_tokens = output_tokens;
  s.planned_input_tokens = planned_input_tokens;
  s.planned_output_tokens = planned_output_tokens;
  s.http_status = http_status;
  s.error = static_cast<analysis::ErrorClass>(error);
  s.finish_reason = static_cast<analysis::FinishReason>(finish & 0x7f);
  s.output_tokens_estimated = (finish & 0x80) != 0;
  return s;
}

}  // namespace llmcap::bench
