// ArrivalProcess: the open-loop arrival schedule of a step, computed ahead of time and never
// slowed by the server (coordinated-omission correct, docs/metrics.md §2.1). Pure and seeded: the
// same profile, kind, burstiness and seed give the same times on every machine.
//
// Method (time change of a renewal process): draw unit-mean gaps in "operational time"
// (exponential → Poisson; 1 → constant spacing; gamma with shape = burstiness and scale =
// 1/burstiness → vLLM-style burstiness, CV = 1/sqrt(burstiness), 1 = Poisson, < 1 burstier),
// and map the running sum Λ back to wall time through the inverse of the cumulative rate
// ∫rate (exact for piecewise-linear rates). A non-homogeneous Poisson process results for the
// exponential kind.
//
// Exact counts (set_exact_count_segments, what a load step uses): a Poisson window of a few
// hundred arrivals carries ±5–10 % more or fewer requests than planned by chance, which made a
// step at the SLA boundary pass or fail by luck (bench/RESULTS.md, issue 17). Within each given
// segment [a, b) the process is then conditioned on its expected count: exactly
// round(Λ(b) − Λ(a)) arrivals, placed by N + 1 gaps of the same kind scaled to fill the
// segment's operational time (for Poisson: the order statistics of uniform draws in Λ, i.e. a
// Poisson process conditioned on its count; burstiness keeps its shape). Constant spacing is
// already exact and is left alone. After the last segment the free process continues.
//
// Not thread-safe (owns an RNG); one per step.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

#include "agent/rate_profile.h"

namespace llmcap::agent {

enum class InterArrival { kPoisson, kConstant, kGamma };
std::string_view to_string(InterArrival k);
std::optional<InterArrival> parse_inter_arrival(std::string_view s);

class ArrivalProcess {
 public:
  // burstiness: gamma shape (> 0); ignored for the other kinds.
  ArrivalProcess(RateProfile profile, InterArrival kind, double burstiness, std::uint64_t seed);

  // Next arrival time in ns since the step start (non-decreasing), or nullopt when the rate
  // stays 0 forever after the previous arrival.
  std::optional<std::int64_t> next();
  // All remaining arrivals before end_ns (consumes them; a later next() continues after).
  std::vector<std::int64_t> until(std::int64_t end_ns);
  // Exact counts in [0, ends_s[0]), [ends_s[0], ends_s[1]), ... (ascending, seconds since the
  // step start; see above). Call before the first next(); no effect for constant spacing.
  void set_exact_count_segments(std::vector<double> ends_s);

 private:
  // Time (s) at which the cumulative rate reaches `target`, or nullopt if never.
  std::optional<double> invert(double target) const;
  double draw_gap();

  RateProfile profile_;
  std::vector<double> cumulative_at_start_;  // Λ at each segment's start
  InterArrival kind_;
  double burstiness_;
  std::mt19937_64 rng_;
  double lambda_ = 0;  // operational time of the previous arrival
  std::optional<std::int64_t> peeked_;
  std::vector<double> exact_ends_;  // Λ at each exact segment's end
  std::size_t exact_next_ = 0;      // the next segment to fill
  std::vector<double> queued_;      // Λ of the current segment's arrivals, latest first
};

}  // namespace llmcap::agent
