// LengthCalibrator: maps a target input length in tokens (of the target's tokenizer) to a
// number of synthetic words, tokens ≈ overhead + tokens_per_word × words (docs/metrics.md §9.1).
//
// fit() sets both coefficients from probes (the target's /tokenize, or usage.prompt_tokens of
// 1-token requests); observe() then keeps adjusting tokens_per_word from the usage of real
// requests, as Σ(tokens − overhead) / Σwords over everything seen. Pure; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace llmcap::agent {

class LengthCalibrator {
 public:
  explicit LengthCalibrator(double tokens_per_word = 1.3, double overhead_tokens = 0);

  // Least-squares fit over (words, tokens) probes. With one distinct word count the overhead
  // is kept and only the ratio fitted. Ignores probes with words ≤ 0 or tokens < 0.
  void fit(const std::vector<std::pair<std::int32_t, std::int32_t>>& probes);
  // A real request with `words` synthetic words had `tokens` prompt tokens.
  void observe(std::int32_t words, std::int32_t tokens);
  // Words to request for a prompt of `tokens` tokens (≥ 1).
  std::int32_t words_for(std::int32_t tokens) const;
  // Words for `tokens` tokens of raw text, without the per-request overhead (≥ 0).
  std::int32_t words_for_raw(std::int32_t tokens) const;

  double tokens_per_word() const { return tokens_per_word_; }
  double overhead_tokens() const { return overhead_tokens_; }
  std::uint64_t observations() const { return observations_; }

 private:
  double tokens_per_word_;
  double overhead_tokens_;
  double sum_words_ = 0;       // Σwords of fitted probes + observations
  double sum_net_tokens_ = 0;  // Σ(tokens − overhead)
  std::uint64_t observations_ = 0;
};

}  // namespace llmcap::agent
