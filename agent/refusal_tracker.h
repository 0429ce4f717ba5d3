// RefusalTracker: tells a load step when its target is not there. Counts connection attempts
// that failed outright (ErrorClass::kConnect: refused, unreachable, name not resolved) and
// whether the target answered in the step (a request got response headers, or any connection
// of the step was accepted).
//
// Two decisions come from it:
// * backoff_ns(): how long a closed-loop slot waits after a refused connection before its next
//   request — 10 ms doubling per consecutive refusal of the step (all slots together) up to
//   1 s, 0 once an answer came — so a down target sees tens of connects a second, not tens of
//   thousands. Open-loop steps need no backoff: their schedule bounds the attempts.
// * unreachable(now): the target never answered in this step, at least kMinRefusals attempts
//   were refused, and the first was at least kMinSpanNs ago: the step ends as an error of the
//   target ("target unreachable"), never as a measurement.
// A target that answered once in the step is never declared unreachable by it: later refusals
// are errors of the target under load and count in the step's error rate.
// Not thread-safe: one per step, used on the step's I/O thread.
#pragma once

#include <cstdint>

namespace llmcap::agent {

class RefusalTracker {
 public:
  static constexpr std::uint64_t kMinRefusals = 8;
  static constexpr std::int64_t kMinSpanNs = 2'000'000'000;
  static constexpr std::int64_t kFirstBackoffNs = 10'000'000;
  static constexpr std::int64_t kMaxBackoffNs = 1'000'000'000;

  void on_refused(std::int64_t now_ns);
  void on_answer();

  std::int64_t backoff_ns() const;
  bool unreachable(std::int64_t now_ns) const;
  std::uint64_t refused() const { return refused_; }
  // Milliseconds since the first refusal (0 when none).
  std::int64_t span_ms(std::int64_t now_ns) const;

 private:
  std::uint64_t refused_ = 0;
  std::uint64_t consecutive_ = 0;
  std::int64_t first_refusal_ns_ = -1;
  bool answered_ = false;
};

}  // namespace llmcap::agent
