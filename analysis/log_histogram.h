// LogHistogram: a mergeable, log-bucketed histogram of non-negative values (DDSketch-style
// bucketing) with a relative error of at most 1% on every quantile it returns.
//
// Used where keeping every value is too costly: ITL gaps pooled over all requests
// (docs/metrics.md §1.4), shards merged across agents. Exact percentiles over stored
// per-request values live in summary.h; this type is the approximate, mergeable counterpart.
//
// Buckets: value v ≥ 1 goes to bucket i = ceil(log(v) / log(γ)), γ = (1 + α) / (1 − α), α = 0.01;
// the bucket's representative 2γ^i / (γ + 1) is within α of every value in (γ^(i-1), γ^i].
// Values below 1 (unit) go to a zero bucket and are reported as 0. The range is fixed at
// [1, 2^40] units (≈ 18 minutes in ns); larger values are clamped and counted in overflow().
// Not thread-safe; merge per-thread histograms instead of sharing one.
#pragma once

#include <cstdint>
#include <vector>

namespace llmcap::analysis {

class LogHistogram {
 public:
  static constexpr double kRelativeError = 0.01;

  LogHistogram();

  void record(double value, std::uint64_t count = 1);
  void merge(const LogHistogram& other);
  void clear();

  std::uint64_t count() const { return count_; }
  std::uint64_t overflow() const { return overflow_; }
  double min() const;   // exact; 0 when empty
  double max() const;   // exact; 0 when empty
  double mean() const;  // exact; 0 when empty
  double sum() const { return sum_; }
  // Quantile q in [0, 1] (e.g. 0.95), within kRelativeError of a true order statistic of the
  // recorded values; clamped to [min, max]. 0 when empty.
  double quantile(double q) const;

  // Sparse view for persistence/merging across processes: (bucket index, count) pairs with the
  // zero bucket at index -1. from_buckets() rebuilds an equal histogram given also the exact
  // count/sum/min/max carried alongside.
  struct Bucket {
    std::int32_t index;
    std::uint64_t count;
  };
  std::vector<Bucket> buckets() const;
  static LogHistogram from_buckets(const std::vector<Bucket>& buckets, double sum, double min,
                                   double max, std::uint64_t overflow = 0);

  // The representative value of a bucket index from buckets() (0 for the zero bucket).
  static double bucket_value(std::int32_t index) { return index < 0 ? 0.0 : representative(index); }

  bool operator==(const LogHistogram& other) const = default;

 private:
  static int index_of(double value);
  static double representative(int index);

  std::vector<std::uint64_t> counts_;  // counts_[i] for bucket i (i ≥ 1 ... kBuckets)
  std::uint64_t zero_count_ = 0;
  std::uint64_t count_ = 0;
  std::uint64_t overflow_ = 0;
  double sum_ = 0;
  double min_ = 0;
  double max_ = 0;
};

}  // namespace llmcap::analysis
