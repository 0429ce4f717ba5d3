#include "agent/refusal_tracker.h"

#include <algorithm>

namespace llmcap::agent {

void RefusalTracker::on_refused(std::int64_t now_ns) {
  if (first_refusal_ns_ < 0) first_refusal_ns_ = now_ns;
  ++refused_;
  ++consecutive_;
}

void RefusalTracker::on_answer() {
  answered_ = true;
  consecutive_ = 0;
}

std::int64_t RefusalTracker::backoff_ns() const {
  if (consecutive_ == 0) return 0;
  const std::uint64_t doublings = std::min<std::uint64_t>(consecutive_ - 1, 20);
  return std::min(kMaxBackoffNs, kFirstBackoffNs << doublings);
}

bool RefusalTracker::unreachable(std::int64_t now_ns) const {
  return !answered_ && refused_ >= kMinRefusals && first_refusal_ns_ >= 0 &&
         now_ns - first_refusal_ns_ >= kMinSpanNs;
}

std::int64_t RefusalTracker::span_ms(std::int64_t now_ns) const {
  return first_refusal_ns_ < 0 ? 0 : (now_ns - first_refusal_ns_) / 1'000'000;
}

}  // namespace llmcap::agent
