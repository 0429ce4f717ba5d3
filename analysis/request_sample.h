// RequestSample: what the load generator records about one request (README.md, "What is measured,
// and how"). A plain value: produced by agent/, summarised by analysis/, persisted by server/ via
// storage/.
//
// Clock: every t_* field is nanoseconds on one monotonic clock (steady_clock), relative to the
// epoch of the step that produced the sample (t = 0 at the step's start). -1 means "did not
// happen" (e.g. no first token because the request failed).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmcap::analysis {

// How a request failed. Add a value here → add it to to_string/parse_error_class and to the
// storage encoding (server/sample_codec) in the same change.
enum class ErrorClass : std::uint8_t {
  kNone = 0,
  kConnect,            // TCP connect refused/unreachable, DNS failure
  kTls,                // TLS handshake or certificate failure
  kTimeoutConnect,     // connect (+TLS) deadline passed
  kTimeoutFirstToken,  // no token event before the first-token deadline
  kTimeoutIdle,        // gap between events exceeded the idle deadline
  kTimeoutTotal,       // whole request exceeded the total deadline
  kHttp4xx,            // 4xx other than 429
  kHttp429,            // 429 Too Many Requests
  kHttp5xx,            // 5xx
  kProtocol,           // malformed HTTP/SSE/JSON, wrong content type
  kCancelled,          // cancelled by us (drain at step end, job cancelled)
  kTruncated,          // a 2xx stream that ended (any framing, or a reset) before its
                       // finish_reason, or before [DONE] after usage: the answer was cut short
  kAbandoned,          // cancelled by the plan's simulated user (workload.abandon): a class of
                       // its own, neither an error nor incomplete (analysis/step_stats.h)
  kClientResources,    // the load generator ran out of its own resources before the request
                       // reached the target (descriptors, local ports, socket memory): the
                       // client's failure, never the target's (docs/metrics.md §2.3)
};

std::string_view to_string(ErrorClass e);
std::optional<ErrorClass> parse_error_class(std::string_view s);
inline constexpr int kErrorClassCount = 15;

enum class FinishReason : std::uint8_t { kUnknown = 0, kStop, kLength, kOther };
std::string_view to_string(FinishReason f);
FinishReason parse_finish_reason(std::string_view s);  // "stop", "length", else kOther

// The derived latencies of one request, from its timestamps: one formula each, for every record
// that carries RequestSample's timestamp and token fields under the same names (RequestSample
// itself, and storage's sample row, so exports need no conversion back).
// TTFT from the intended send time (docs/metrics.md §1.4); nullopt when no token arrived.
template <class S>
std::optional<std::int64_t> ttft_ns_of(const S& s) {
  if (s.t_first_token_ns < 0) return std::nullopt;
  return s.t_first_token_ns - s.t_intended_ns;
}
// TTFT from the actual send (ttft_service, docs/metrics.md §1.4).
template <class S>
std::optional<std::int64_t> ttft_service_ns_of(const S& s) {
  if (s.t_first_token_ns < 0 || s.t_send_ns < 0) return std::nullopt;
  return s.t_first_token_ns - s.t_send_ns;
}
// E2E = last token event (or end of stream) − t_intended (docs/metrics.md §1.4).
template <class S>
std::optional<std::int64_t> e2e_ns_of(const S& s) {
  const std::int64_t end = s.t_last_token_ns >= 0 ? s.t_last_token_ns : s.t_end_ns;
  if (end < 0) return std::nullopt;
  return end - s.t_intended_ns;
}
// TPOT = (last − first token event) / (output tokens − 1), when output tokens ≥ 2
// (docs/metrics.md §1.4).
template <class S>
std::optional<double> tpot_ns_of(const S& s) {
  if (s.output_tokens < 2 || s.t_first_token_ns < 0 || s.t_last_token_ns < s.t_first_token_ns)
    return std::nullopt;
  return static_cast<double>(s.t_last_token_ns - s.t_first_token_ns) / (s.output_tokens - 1);
}

struct RequestSample {
  std::uint64_t index = 0;         // order of intention within the step (0, 1, ...)
  std::int64_t t_intended_ns = 0;  // when the schedule meant to send it (metrics.md §1.1)
  std::int64_t t_send_ns = -1;     // first byte of the request written
  std::int64_t connect_ns =
      -1;                    // duration of TCP connect; -1 when a kept-alive connection was reused
  std::int64_t tls_ns = -1;  // duration of the TLS handshake; -1 when none
  std::int64_t t_headers_ns = -1;      // response status line + headers received
  std::int64_t t_first_token_ns = -1;  // arrival of the first token event (metrics.md §1.2)
  std::int64_t t_last_token_ns = -1;   // arrival of the last token event
  std::int64_t t_end_ns = -1;          // end of the response (stream end, error or cancel)

  std::uint32_t token_events = 0;        // SSE events carrying ≥ 1 generated token
  std::int32_t input_tokens = -1;        // usage.prompt_tokens; -1 when the server gave none
  std::int32_t output_tokens = -1;       // usage.completion_tokens, else token_events (estimated)
  bool output_tokens_estimated = false;  // true when output_tokens was counted from events
  std::int32_t planned_input_tokens = -1;
  std::int32_t planned_output_tokens = -1;
  std::int64_t max_itl_ns = -1;  // largest gap between consecutive token events

  std::int16_t http_status = 0;  // 0 when no response status was received
  ErrorClass error = ErrorClass::kNone;
  FinishReason finish_reason = FinishReason::kUnknown;
  std::string error_message;  // human text, ≤ 256 bytes (offending bytes truncated)

  // Optional (plan: record_token_times): arrival time of every token event, same clock.
  std::vector<std::int64_t> token_times_ns;

  bool ok() const { return error == ErrorClass::kNone; }
  std::optional<std::int64_t> ttft_ns() const;
  std::optional<std::int64_t> ttft_service_ns() const;
  std::optional<std::int64_t> e2e_ns() const;
  std::optional<double> tpot_ns() const;
  std::int64_t schedule_lag_ns() const { return t_send_ns < 0 ? 0 : t_send_ns - t_intended_ns; }
  // The client's own part of the schedule lag: minus TCP connect and TLS handshake
  // (docs/metrics.md §1.1).
  std::int64_t dispatch_lag_ns() const {
    if (t_send_ns < 0) return 0;
    return std::max<std::int64_t>(0, schedule_lag_ns() - std::max<std::int64_t>(0, connect_ns) -
                                         std::max<std::int64_t>(0, tls_ns));
  }
};

inline std::optional<std::int64_t> RequestSample::ttft_ns() const { return ttft_ns_of(*this); }
inline std::optional<std::int64_t> RequestSample::ttft_service_ns() const {
  return ttft_service_ns_of(*this);
}
inline std::optional<std::int64_t> RequestSample::e2e_ns() const { return e2e_ns_of(*this); }
inline std::optional<double> RequestSample::tpot_ns() const { return tpot_ns_of(*this); }

// The enums as stored (plain integers): an unknown value reads as kProtocol / kOther.
inline ErrorClass error_class_from(int v) {
  return v >= 0 && v < kErrorClassCount ? static_cast<ErrorClass>(v) : ErrorClass::kProtocol;
}
inline FinishReason finish_reason_from(int v) {
  return v >= 0 && v <= static_cast<int>(FinishReason::kOther) ? static_cast<FinishReason>(v)
                                                               : FinishReason::kOther;
}

}  // namespace llmcap::analysis
