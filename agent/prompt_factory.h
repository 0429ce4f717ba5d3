// PromptFactory: synthetic prompts whose input lengths follow a LengthDistribution and whose
// output lengths (max_tokens) follow another, seeded and reproducible (docs/metrics.md §9).
//
// A prompt is `shared prefix words` (identical across requests, only when asked) followed by
// a unique header (the request's index spelled in vocabulary words, so no two prompts share
// more than the prefix and prefix caches cannot make them fake-fast) and random words. The
// word count comes from the LengthCalibrator.
//
// Trace replay (from_blocks()): a prompt made of shared blocks, each standing for block_tokens
// tokens and named by a block id (Mooncake's hash_ids): every block id maps to its own text (its
// id spelled in vocabulary words, then words from a generator seeded by the id alone), so two
// requests that list the same ids in the same order share exactly that text as their prefix, in
// every step and on every target; the request's own tail (its index, then random words) follows
// to reach its input length. Not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "agent/length_calibrator.h"
#include "analysis/length_distribution.h"

namespace llmcap::agent {

struct PromptItem {
  std::string prompt;         // completions prompt / chat user message
  std::string messages_json;  // chat messages from a dataset; empty for synthetic
  std::int32_t planned_input_tokens = -1;
  std::int32_t planned_output_tokens = -1;  // max_tokens to send; -1 = none
  std::int32_t words = 0;  // synthetic words (for calibration feedback); 0 = dataset
};

// A request's planned lengths (tokens) without its text.
struct PlannedLengths {
  std::int32_t input_tokens = 0;
  std::int32_t output_tokens = 0;
};

class PromptFactory {
 public:
  PromptFactory(analysis::LengthDistribution input, analysis::LengthDistribution output,
                std::int32_t shared_prefix_tokens, std::uint64_t seed,
                std::uint64_t content_seed = 0);  // the words' seed; 0: seed

  // The next prompt (index = its order of intention in the step). prefix_group >= 0: the prompt
  // starts with that group's prefix of group_prefix_tokens tokens (group_prefix_text()) instead
  // of the shared prefix.
  PromptItem next(std::uint64_t index, const LengthCalibrator& calibrator, int prefix_group = -1,
                  std::int32_t group_prefix_tokens = 0);
  // A prompt of the given planned lengths (as next() builds it, with lengths drawn elsewhere:
  // lengths_at()).
  PromptItem make(std::uint64_t index, PlannedLengths lengths, const LengthCalibrator& calibrator,
                  int prefix_group = -1, std::int32_t group_prefix_tokens = 0);
  // Prefix group `group`'s text in `words` words: block_text(group, words), so it starts with
  // the group number spelled as a vocabulary word and groups (< 128) differ from the first word;
  // the same on every call, step and target.
  static std::string group_prefix_text(int group, std::int32_t words);
  // The next request's planned lengths without building its text (virtual-time prediction,
  // server/engine/virtual_step_backend.h): the same draws next() makes, so both see the same
  // lengths for the same seed. Use one or the other on a factory, not both.
  PlannedLengths next_lengths();
  // Planned lengths that are a pure function of the factory's seed and `key` (not of the draws
  // before): a conversation's turns, keyed on (session, turn) (conversation.h, turn_draw_key),
  // so a turn's lengths do not depend on the order in which sessions happen to reach it.
  PlannedLengths lengths_at(std::uint64_t key) const;
  // A trace request's prompt (see above): the whole blocks of `hash_ids` that fit in
  // `input_tokens` (a trailing partial block becomes part of the tail, as prefix caches keep
  // whole blocks only), then the tail. The block word count is fixed from the calibration at the
  // first call, so a block's text stays the same all step long.
  PromptItem from_blocks(std::uint64_t index, std::int32_t input_tokens, std::int32_t output_tokens,
                         const std::vector<std::uint64_t>& hash_ids, std::int32_t block_tokens,
                         const LengthCalibrator& calibrator);
  // The text of block `id` in `words` words (identical on every call and every factory).
  static std::string block_text(std::uint64_t id, std::int32_t words);
  // A probe text of exactly `words` words (for calibration), unique per `salt`.
  std::string probe_text(std::int32_t words, std::uint64_t salt);

  // Number of words in the built-in vocabulary.
  static std::size_t vocabulary_size();

 private:
  void append_words(std::string& out, std::int32_t count);
  void append_index(std::string& out, std::uint64_t index);

  analysis::LengthSampler input_;
  analysis::LengthSampler output_;
  std::int32_t shared_prefix_tokens_;
  std::mt19937_64 rng_;
  std::string prefix_;  // built lazily for the calibrated word count
  std::int32_t prefix_words_ = -1;
  std::int32_t block_words_ = -1;  // from_blocks(): words per block, fixed at the first call
  std::vector<std::string> group_prefixes_;  // by group, built at the group's first prompt
};

}  // namespace llmcap::agent
