// SimTokenizer: the simulated model's tokenizer and its pseudo-word text generator.
//
// Tokenizer (documented in sim/README.md): one token per whitespace-separated word (ASCII
// space, tab, CR, LF); the token id is FNV-1a(word) mod vocab. No BOS token. Chat messages are
// rendered as "<|role|> content" per message followed by "<|assistant|>", then tokenized the
// same way, so each message costs one template token and the prompt one more. /tokenize and
// usage.prompt_tokens use exactly this, so a load generator can calibrate against it.
//
// Generated text (sim/README.md "Generated text"): each token is a separator and a pseudo-word of
// 1–3 consonant-vowel syllables drawn from a seeded generator ("ba", "stoufe", "thaikeamu"); one
// word in 16 ends a sentence with ".", one in 16 ends with ","; the separator is " ", or "\n"
// for one sentence start in four, so stop strings such as ".", ",", "\n" or a syllable occur at
// realistic rates. Every token is one whitespace-separated word, so re-tokenizing the output gives
// back completion_tokens. Thread safety: SimTokenizer is immutable; a WordGenerator belongs to one
// sequence.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmcap::sim {

class SimTokenizer {
 public:
  explicit SimTokenizer(std::int64_t vocab) : vocab_(vocab > 0 ? vocab : 32000) {}

  std::vector<std::int64_t> tokenize(std::string_view text) const;
  std::int64_t count(std::string_view text) const;
  // (role, content) pairs → the rendered prompt text described above.
  static std::string render_chat(const std::vector<std::pair<std::string, std::string>>& messages);

 private:
  std::int64_t vocab_;
};

class WordGenerator {
 public:
  // seed: the server seed (or the request's `seed`); request_index: the request's arrival number
  // (deterministic for a deterministic client); choice: the sequence within the request (n > 1),
  // choice 0 draws what a request of n = 1 draws.
  WordGenerator(std::uint64_t seed, std::uint64_t request_index, std::uint64_t choice = 0);
  // The text of the next token, with its leading separator (" " or "\n").
  std::string next_token_text();

 private:
  std::mt19937_64 rng_;
  bool after_sentence_ = false;  // the previous word ended with "."
};

}  // namespace llmcap::sim
