#include "analysis/log_histogram.h"

#include <algorithm>
#include <cmath>

namespace llmcap::analysis {

namespace {
const double kGamma = (1 + LogHistogram::kRelativeError) / (1 - LogHistogram::kRelativeError);
const double kLogGamma = std::log(kGamma);
constexpr double kMaxValue = 1099511627776.0;  // 2^40
// Bucket index of kMaxValue, plus one for safety.
const int kBuckets = static_cast<int>(std::ceil(std::log(kMaxValue) / kLogGamma)) + 2;
}  // namespace

LogHistogram::LogHistogram() : counts_(static_cast<std::size_t>(kBuckets), 0) {}

int LogHistogram::index_of(double value) {
  // value ≥ 1 here; bucket 0 holds exactly 1.0 (log = 0).
  return std::clamp(static_cast<int>(std::ceil(std::log(value) / kLogGamma)), 0, kBuckets - 1);
}

double LogHistogram::representative(int index) {
  return 2.0 * std::pow(kGamma, index) / (kGamma + 1.0);
}

void LogHistogram::record(double value, std::uint64_t count) {
  if (count == 0 || std::isnan(value)) return;
  if (value < 0) value = 0;
  if (value > kMaxValue) {
    overflow_ += count;
    value = kMaxValue;
  }
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  count_ += count;
  sum_ += value * static_cast<double>(count);
  if (value < 1.0) {
    zero_count_ += count;
  } else {
    counts_[static_cast<std::size_t>(index_of(value))] += count;
  }
}

void LogHistogram::merge(const LogHistogram& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  zero_count_ += other.zero_count_;
  count_ += other.count_;
  overflow_ += other.overflow_;
  sum_ += other.sum_;
}

void LogHistogram::clear() { *this = LogHistogram(); }

double LogHistogram::min() const { return min_; }
double LogHistogram::max() const { return max_; }
double LogHistogram::mean() const { return count_ == 0 ? 0 : sum_ / static_cast<double>(count_); }

double LogHistogram::quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Rank of the order statistic (nearest-rank method, 1-based).
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
  std::uint64_t seen = zero_count_;
  if (seen >= rank) return std::clamp(0.0, min_, max_);
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(representative(static_cast<int>(i)), min_, max_);
  }
  return max_;
}

std::vector<LogHistogram::Bucket> LogHistogram::buckets() const {
  std::vector<Bucket> out;
  if (zero_count_ > 0) out.push_back({-1, zero_count_});
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] > 0) out.push_back({static_cast<std::int32_t>(i), counts_[i]});
  }
  return out;
}

LogHistogram LogHistogram::from_buckets(const std::vector<Bucket>& buckets, double sum, double min,
                                        double max, std::uint64_t overflow) {
  LogHistogram h;
  for (const auto& b : buckets) {
    if (b.index < 0) {
      h.zero_count_ += b.count;
    } else if (b.index < kBuckets) {
      h.counts_[static_cast<std::size_t>(b.index)] += b.count;
    } else {
      continue;
    }
    h.count_ += b.count;
  }
  h.sum_ = sum;
  h.min_ = min;
  h.max_ = max;
  h.overflow_ = overflow;
  return h;
}

}  // namespace llmcap::analysis
