#include "agent/length_calibrator.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace llmcap::agent {

LengthCalibrator::LengthCalibrator(double tokens_per_word, double overhead_tokens)
    : tokens_per_word_(tokens_per_word > 0 ? tokens_per_word : 1.3),
      overhead_tokens_(std::max(0.0, overhead_tokens)) {}

void LengthCalibrator::fit(const std::vector<std::pair<std::int32_t, std::int32_t>>& probes) {
  double n = 0, sw = 0, st = 0, sww = 0, swt = 0;
  std::set<std::int32_t> distinct;
  for (const auto& [w, t] : probes) {
    if (w <= 0 || t < 0) continue;
    n += 1;
    sw += w;
    st += t;
    sww += static_cast<double>(w) * w;
    swt += static_cast<double>(w) * t;
    distinct.insert(w);
  }
  if (n == 0) return;
  if (distinct.size() >= 2) {
    const double slope = (n * swt - sw * st) / (n * sww - sw * sw);
    const double intercept = (st - slope * sw) / n;
    if (slope > 0) {
      tokens_per_word_ = slope;
      overhead_tokens_ = std::max(0.0, intercept);
    }
  } else {
    const double ratio = (st - n * overhead_tokens_) / sw;
    if (ratio > 0) tokens_per_word_ = ratio;
  }
  // Seed the running ratio with the probes so observe() refines rather than replaces them.
  sum_words_ = sw;
  sum_net_tokens_ = tokens_per_word_ * sw;
}

void LengthCalibrator::observe(std::int32_t words, std::int32_t tokens) {
  if (words <= 0 || tokens < 0) return;
  sum_words_ += words;
  sum_net_tokens_ += tokens - overhead_tokens_;
  ++observations_;
  const double ratio = sum_net_tokens_ / sum_words_;
  if (ratio > 0) tokens_per_word_ = ratio;
}

std::int32_t LengthCalibrator::words_for(std::int32_t tokens) const {
  const double w = std::round((tokens - overhead_tokens_) / tokens_per_word_);
  return static_cast<std::int32_t>(std::max(1.0, w));
}

std::int32_t LengthCalibrator::words_for_raw(std::int32_t tokens) const {
  const double w = std::round(tokens / tokens_per_word_);
  return static_cast<std::int32_t>(std::max(0.0, w));
}

}  // namespace llmcap::agent
