#include "agent/rate_profile.h"

#include <cmath>

namespace llmcap::agent {

RateProfile RateProfile::constant(double rate_per_s) {
  return from_segments({{0, 1, rate_per_s, rate_per_s}});
}

RateProfile RateProfile::steps(const std::vector<std::pair<double, double>>& duration_and_rate) {
  std::vector<Segment> segs;
  double t = 0;
  for (const auto& [dur, rate] : duration_and_rate) {
    segs.push_back({t, t + dur, rate, rate});
    t += dur;
  }
  return from_segments(std::move(segs));
}

RateProfile RateProfile::ramp(double from_per_s, double to_per_s, double duration_s) {
  return from_segments(
      {{0, duration_s, from_per_s, to_per_s}, {duration_s, duration_s + 1, to_per_s, to_per_s}});
}

RateProfile RateProfile::burst(double base_per_s, double factor, double start_s,
                               double duration_s) {
  std::vector<Segment> segs;
  if (start_s > 0) segs.push_back({0, start_s, base_per_s, base_per_s});
  segs.push_back({start_s, start_s + duration_s, base_per_s * factor, base_per_s * factor});
  segs.push_back({start_s + duration_s, start_s + duration_s + 1, base_per_s, base_per_s});
  return from_segments(std::move(segs));
}

RateProfile RateProfile::from_segments(std::vector<Segment> segments) {
  RateProfile p;
  p.segments_ = std::move(segments);
  return p;
}

std::optional<std::string> RateProfile::validate() const {
  if (segments_.empty()) return "rate profile: no segments";
  double t = 0;
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    const auto& s = segments_[i];
    const std::string where = "rate profile segment " + std::to_string(i) + ": ";
    if (!std::isfinite(s.start_s) || !std::isfinite(s.end_s) || !std::isfinite(s.rate_start) ||
        !std::isfinite(s.rate_end))
      return where + "values must be finite";
    if (std::abs(s.start_s - t) > 1e-9) return where + "must start where the previous ended";
    if (!(s.end_s > s.start_s)) return where + "duration must be > 0";
    if (s.rate_start < 0 || s.rate_end < 0) return where + "rate must be >= 0";
    t = s.end_s;
  }
  return std::nullopt;
}

double RateProfile::rate_at(double t_s) const {
  for (const auto& s : segments_) {
    if (t_s < s.end_s) {
      const double f = (t_s - s.start_s) / (s.end_s - s.start_s);
      return s.rate_start + (s.rate_end - s.rate_start) * f;
    }
  }
  return segments_.empty() ? 0 : segments_.back().rate_end;
}

double RateProfile::cumulative(double t_s) const {
  double total = 0;
  for (const auto& s : segments_) {
    const double end = std::min(t_s, s.end_s);
    if (end <= s.start_s) return total;
    const double tau = end - s.start_s;
    const double slope = (s.rate_end - s.rate_start) / (s.end_s - s.start_s);
    total += s.rate_start * tau + slope * tau * tau / 2;
    if (t_s <= s.end_s) return total;
  }
  if (!segments_.empty() && t_s > segments_.back().end_s) {
    total += segments_.back().rate_end * (t_s - segments_.back().end_s);
  }
  return total;
}

std::optional<double> RateProfile::time_for_arrivals(double from_s, double arrivals) const {
  const double base = cumulative(from_s);
  auto reached = [&](double t) { return cumulative(from_s + t) - base >= arrivals; };
  double hi = 1;
  while (!reached(hi)) {
    hi *= 2;
    if (hi > 1e9) return std::nullopt;
  }
  double lo = 0;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (reached(mid) ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace llmcap::agent
