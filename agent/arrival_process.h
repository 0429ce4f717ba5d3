// ArrivalProcess: the open-loop arrival schedule of a step, computed ahead of time and never
// slowed by the server (coordinated-omission correct, DOMAIN §2/§7.2). Pure and seeded: the
// same profile, kind, burstiness and seed give the same times on every machine.
//
// Method (time change of a renewal process): draw unit-mean gaps in "operational time"
// (exponential → Poisson; 1 → constant spacing; gamma with shape = burstiness and scale =
// 1/burstiness → vLLM-style burstiness, CV = 1/sqrt(burstiness), 1 = Poisson, < 1 burstier),
// and map the running sum Λ back to wall time through the inverse of the cumulative rate
// ∫rate (exact for piecewise-linear rates). A non-homogeneous Poisson process results for the
// exponential kind.
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
};

}  // namespace llmcap::agent
