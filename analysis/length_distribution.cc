#include "analysis/length_distribution.h"

#include <algorithm>
#include <cmath>

namespace llmcap::analysis {

LengthDistribution LengthDistribution::fixed(std::int32_t tokens) {
  LengthDistribution d;
  d.kind = Kind::kFixed;
  d.mean = tokens;
  return d;
}

double LengthDistribution::nominal_mean() const {
  switch (kind) {
    case Kind::kFixed:
    case Kind::kNormal:
    case Kind::kLognormal: return mean;
    case Kind::kUniform: return (low + high) / 2.0;
    case Kind::kEmpirical: {
      if (values.empty()) return 0;
      double s = 0;
      for (auto v : values) s += v;
      return s / static_cast<double>(values.size());
    }
  }
  return mean;
}

std::string_view to_string(LengthDistribution::Kind k) {
  switch (k) {
    case LengthDistribution::Kind::kFixed: return "fixed";
    case LengthDistribution::Kind::kUniform: return "uniform";
    case LengthDistribution::Kind::kNormal: return "normal";
    case LengthDistribution::Kind::kLognormal: return "lognormal";
    case LengthDistribution::Kind::kEmpirical: return "empirical";
  }
  return "fixed";
}

LengthSampler::LengthSampler(LengthDistribution spec, std::uint64_t seed)
    : spec_(std::move(spec)), seed_(seed), rng_(seed) {}

std::int32_t LengthSampler::next() { return draw(rng_); }

std::int32_t LengthSampler::at(std::uint64_t key) const {
  // splitmix64 of (seed, key) seeds a generator of its own for this one draw.
  std::uint64_t z = seed_ ^ (key + 0x9e3779b97f4a7c15ULL) * 0xd1342543de82ef95ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  std::mt19937_64 rng(z ^ (z >> 31));
  return draw(rng);
}

std::int32_t LengthSampler::draw(std::mt19937_64& rng) const {
  double v = spec_.mean;
  switch (spec_.kind) {
    case LengthDistribution::Kind::kFixed: break;
    case LengthDistribution::Kind::kUniform: {
      std::uniform_int_distribution<std::int32_t> d(std::min(spec_.low, spec_.high),
                                                    std::max(spec_.low, spec_.high));
      v = d(rng);
      break;
    }
    case LengthDistribution::Kind::kNormal: {
      std::normal_distribution<double> d(spec_.mean, std::max(0.0, spec_.stddev));
      v = d(rng);
      break;
    }
    case LengthDistribution::Kind::kLognormal: {
      // Parameters of the underlying normal from the lengths' mean m and stddev s.
      const double m = std::max(1.0, spec_.mean);
      const double s = std::max(0.0, spec_.stddev);
      const double sigma2 = std::log(1.0 + (s * s) / (m * m));
      const double mu = std::log(m) - sigma2 / 2.0;
      std::lognormal_distribution<double> d(mu, std::sqrt(sigma2));
      v = d(rng);
      break;
    }
    case LengthDistribution::Kind::kEmpirical: {
      if (spec_.values.empty()) break;
      std::uniform_int_distribution<std::size_t> d(0, spec_.values.size() - 1);
      v = spec_.values[d(rng)];
      break;
    }
  }
  // std::clamp is undefined when lo > hi: accept swapped bounds as the same interval.
  const auto lo = static_cast<double>(std::min(spec_.min_tokens, spec_.max_tokens));
  const auto hi = static_cast<double>(std::max(spec_.min_tokens, spec_.max_tokens));
  const double clamped = std::clamp(std::round(v), lo, hi);
  return static_cast<std::int32_t>(clamped);
}

}  // namespace llmcap::analysis
