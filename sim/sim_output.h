// SimOutput: what one choice of a simulated request generates, decided before the engine runs it.
// The simulated model's words are known in advance (WordGenerator), so the server checks each
// generated token against the request's stop strings and stop token ids as vLLM does after
// every token, and submits the shortened length to the engine: a sequence that stops early is
// freed at the step that produced its stop token, and no GPU time is spent on tokens never sent.
// Also the synthetic log-probabilities of each token (deterministic, ≤ 0, a proper
// distribution: the sampled token is the most likely, the alternatives share what is left).
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/sim_request.h"
#include "sim/sim_tokenizer.h"

namespace llmcap::sim {

struct ChoicePlan {
  // The tokens the engine generates (its output length is tokens.size(), ≥ 1), with the id of
  // each under SimTokenizer; the last one is the stop token when stopped.
  std::vector<std::string> tokens;
  std::vector<std::int64_t> token_ids;
  std::string text;      // the text the client receives (stop string cut, as vLLM does by default)
  bool stopped = false;  // finish_reason "stop" (else "length")
  std::optional<std::string> stop_string;     // stop_reason: the stop string that matched
  std::optional<std::int64_t> stop_token_id;  // stop_reason: the stop token id that matched
  // Characters of `text` a stream has sent once token k (0-based) is generated. vLLM holds back
  // the last (longest stop string − 1) characters while streaming so that a stop string split
  // over tokens is never sent in part; the last token releases the rest.
  std::vector<std::size_t> visible_chars;

  const char* finish_reason() const { return stopped ? "stop" : "length"; }
};

// Draws up to g.max_tokens tokens from `words` and applies g's stop strings (checked once more
// than g.min_tokens tokens exist, in the order given, against the text the newest token
// completed), stop token ids (once g.min_tokens exist) and include_stop_str_in_output.
ChoicePlan plan_choice(const GenerationRequest& g, WordGenerator& words,
                       const SimTokenizer& tokenizer);

struct TopLogprob {
  std::string token;
  double logprob = 0;  // ≤ 0
};
struct TokenLogprob {
  std::string token;
  double logprob = 0;           // ≤ 0: the sampled token's
  std::vector<TopLogprob> top;  // `top` most likely tokens, the sampled one first (top ≥ 1)
};

// Deterministic synthetic log-probabilities of `token` at a position (`salt`: the sequence and
// position, so repeated words differ): the sampled token's probability is in (0.37, 0.99], the
// alternatives (distinct pseudo-words) take halves of the remaining mass, so they descend and
// the probabilities sum to less than 1.
TokenLogprob synthetic_logprob(const std::string& token, std::uint64_t salt, std::int64_t top);

}  // namespace llmcap::sim
