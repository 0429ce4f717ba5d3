#include "agent/arrival_process.h"

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

std::optional<std::int64_t> ArrivalProcess::next() {
  if (peeked_) {
    auto v = peeked_;
    peeked_.reset();
    return v;
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
