// LengthDistribution: how input or output lengths (in tokens) of a workload are drawn.
// A plain spec plus a seeded sampler; every draw is clamped to [min_tokens, max_tokens].
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace llmcap::analysis {

struct LengthDistribution {
  enum class Kind { kFixed, kUniform, kNormal, kLognormal, kEmpirical };
  Kind kind = Kind::kFixed;
  double mean = 256;     // fixed: the value; normal/lognormal: the mean of the lengths
  double stddev = 0;     // normal/lognormal: standard deviation of the lengths
  std::int32_t low = 0;  // uniform: inclusive bounds
  std::int32_t high = 0;
  std::vector<std::int32_t> values;  // empirical: drawn uniformly from this list
  std::int32_t min_tokens = 1;       // clamp bounds applied to every draw
  std::int32_t max_tokens = 1 << 20;

  static LengthDistribution fixed(std::int32_t tokens);
  // Mean of the distribution after clamping is not computed; this is the nominal mean.
  double nominal_mean() const;
};

std::string_view to_string(LengthDistribution::Kind k);

// Draws lengths from a LengthDistribution with its own engine (seeded, reproducible).
class LengthSampler {
 public:
  LengthSampler(LengthDistribution spec, std::uint64_t seed);
  // The next draw of the sampler's sequence.
  std::int32_t next();
  // A draw that is a pure function of (seed, key), whatever was drawn before: for draws that
  // must not depend on the order events happen in (a conversation's turn, keyed on its session
  // and turn number).
  std::int32_t at(std::uint64_t key) const;

 private:
  std::int32_t draw(std::mt19937_64& rng) const;

  LengthDistribution spec_;
  std::uint64_t seed_;
  std::mt19937_64 rng_;
};

}  // namespace llmcap::analysis
