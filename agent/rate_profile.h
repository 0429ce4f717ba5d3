// RateProfile: an offered request rate that changes over time, as a piecewise-linear function
// of time since the step start (requests/s). Constant, steps, linear ramp and burst
// (rate × k for T s) are all built from segments. After the last segment the rate stays at
// the last segment's end rate. A plain value; thread-safe to read.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace llmcap::agent {

class RateProfile {
 public:
  struct Segment {
    double start_s = 0;  // segment covers [start_s, end_s)
    double end_s = 0;
    double rate_start = 0;  // requests/s at start_s
    double rate_end = 0;    // requests/s approaching end_s (linear in between)
  };

  static RateProfile constant(double rate_per_s);
  // Consecutive steps of (duration_s, rate_per_s); the last rate holds afterwards.
  static RateProfile steps(const std::vector<std::pair<double, double>>& duration_and_rate);
  // From `from` to `to` requests/s linearly over duration_s, then `to`.
  static RateProfile ramp(double from_per_s, double to_per_s, double duration_s);
  // base rate, except base × factor during [start_s, start_s + duration_s).
  static RateProfile burst(double base_per_s, double factor, double start_s, double duration_s);
  // Builds from explicit segments (must be contiguous from 0, non-negative rates).
  static RateProfile from_segments(std::vector<Segment> segments);

  // Rate at time t_s (≥ 0).
  double rate_at(double t_s) const;
  // Expected arrivals in [0, t_s): the integral of the rate.
  double cumulative(double t_s) const;
  // How long after from_s the expected arrivals reach `arrivals` (> 0): the t with
  // cumulative(from_s + t) − cumulative(from_s) = arrivals (arrivals / rate at a constant
  // rate); nullopt when the rate never offers that many (within 10⁹ s).
  std::optional<double> time_for_arrivals(double from_s, double arrivals) const;
  const std::vector<Segment>& segments() const { return segments_; }
  // Error naming the problem, or nullopt when valid.
  std::optional<std::string> validate() const;

 private:
  std::vector<Segment> segments_;
};

}  // namespace llmcap::agent
