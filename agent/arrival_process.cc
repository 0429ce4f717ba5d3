#include "agent/arrival_process.h"

#include <algorithm>
#include <cmath>

namespace llmcap::agent {

std::string_view to_string(InterArrival k) {
  switch (k) {
    case InterArrival::kPoisson: return "poisson";
    case InterArrival::kConstant: return "constant";
    case InterArrival::kGamma: return "gamma";
  }
  return "poisson";
}

std::optional<InterArrival> parse_inter_arrival(std::string_view s) {
  if (s == "poisson") return InterArrival::kPoisson;
  if (s == "constant") return InterArrival::kConstant;
  if (s == "gamma") return InterArrival::kGamma;
  return std::nullopt;
}

ArrivalProcess::ArrivalProcess(RateProfile profile, InterArrival kind, double burstiness,
                               std::uint64_t seed)
    : profile_(std::move(profile)),
      kind_(kind),
      burstiness_(burstiness > 0 ? burstiness : 1.0),
      rng_(seed) {
  for (const auto& s : profile_.segments())
    cumulative_at_start_.push_back(profile_.cumulative(s.start_s));
}

double ArrivalProcess::draw_gap() {
  switch (kind_) {
    case InterArrival::kConstant: return 1.0;
    case InterArrival::kPoisson: {
      std::exponential_distribution<double> d(1.0);
      return d(rng_);
    }
    case InterArrival::kGamma: {
      std::gamma_distribution<double> d(burstiness_, 1.0 / burstiness_);
      return d(rng_);
    }
  }
  return 1.0;
}

std::optional<double> ArrivalProcess::invert(double target) const {
  const auto& segs = profile_.segments();
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const auto& s = segs[i];
    const double l0 = cumulative_at_start_[i];
    const double dur = s.end_s - s.start_s;
    const double slope = (s.rate_end - s.rate_start) / dur;
    const double mass = s.rate_start * dur + slope * dur * dur / 2;
    if (target <= l0 + mass && mass > 0) {
      const double dl = std::max(0.0, target - l0);
      // Solve rate_start·τ + slope·τ²/2 = dl; the form below is stable for any slope sign
      // and for rate_start = 0.
      const double disc = std::max(0.0, s.rate_start * s.rate_start + 2 * slope * dl);
      const double denom = s.rate_start + std::sqrt(disc);
      const double tau = denom > 0 ? 2 * dl / denom : 0;
      return s.start_s + std::min(tau, dur);
    }
  }
  if (segs.empty()) return std::nullopt;
  const double tail_rate = segs.back().rate_end;
  if (tail_rate <= 0) return std::nullopt;
  const double l_end = profile_.cumulative(segs.back().end_s);
  return segs.back().end_s + (target - l_end) / tail_rate;
}

void ArrivalProcess::set_exact_count_segments(std::vector<double> ends_s) {
  exact_ends_.clear();
  exact_next_ = 0;
  queued_.clear();
  if (kind_ == InterArrival::kConstant) return;
  double previous = 0;
  for (const double e : ends_s) {
    const double l = profile_.cumulative(std::max(e, 0.0));
    if (l < previous) break;  // not ascending: the rest stays free
    exact_ends_.push_back(l);
    previous = l;
  }
}

std::optional<std::int64_t> ArrivalProcess::next() {
  if (peeked_) {
    auto v = peeked_;
    peeked_.reset();
    return v;
  }
  while (queued_.empty() && exact_next_ < exact_ends_.size()) {
    // Fill the next exact segment: N arrivals from N + 1 gaps scaled to its operational length.
    const double l0 = exact_next_ == 0 ? 0.0 : exact_ends_[exact_next_ - 1];
    const double l1 = exact_ends_[exact_next_++];
    const auto n = static_cast<std::size_t>(std::llround(l1 - l0));
    std::vector<double> at(n);
    double sum = 0;
    for (std::size_t k = 0; k < n; ++k) {
      sum += draw_gap();
      at[k] = sum;
    }
    sum += draw_gap();
    for (std::size_t k = n; k-- > 0;) queued_.push_back(l0 + (l1 - l0) * at[k] / sum);
    lambda_ = l1;  // the free process (after the last segment) continues from its end
  }
  if (!queued_.empty()) {
    const double l = queued_.back();
    queued_.pop_back();
    const auto t_s = invert(l);
    if (!t_s) return std::nullopt;
    return static_cast<std::int64_t>(std::llround(*t_s * 1e9));
  }
  lambda_ += draw_gap();
  const auto t_s = invert(lambda_);
  if (!t_s) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(*t_s * 1e9));
}

std::vector<std::int64_t> ArrivalProcess::until(std::int64_t end_ns) {
  std::vector<std::int64_t> out;
  while (true) {
    auto t = next();
    if (!t) break;
    if (*t >= end_ns) {
      peeked_ = t;
      break;
    }
    out.push_back(*t);
  }
  return out;
}

}  // namespace llmcap::agent
