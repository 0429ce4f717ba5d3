// SimRequest: parsing and validation of an OpenAI-style /v1/completions or
// /v1/chat/completions body into what the simulator needs (prompt length under SimTokenizer,
// output length, streaming flags, stop conditions, n, logprobs). Fields that would change the
// answer's meaning and the simulator cannot honour are refused with a 400 naming the field, as
// vLLM refuses what it does not support (sim/README.md "What the simulator honours"); unknown
// fields are ignored, as vLLM does. Kept apart from HTTP so it is unit-testable.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/sim_tokenizer.h"

namespace llmcap::sim {

struct GenerationRequest {
  bool chat = false;
  std::string model;  // as sent; empty when absent
  std::int64_t prompt_tokens = 0;
  std::int64_t max_tokens = 0;  // the output length the simulator produces
  std::int64_t min_tokens = 0;  // accepted and validated; the sim never stops early
  bool ignore_eos = false;      // accepted; the sim never emits EOS anyway
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::int64_t n = 1;          // choices, each an independent sequence (best_of must equal n)
  // Stop strings, in the order sent (vLLM checks them in this order); the text ends before the
  // first one found, finish_reason "stop", stop_reason the string.
  std::vector<std::string> stop;
  std::vector<std::int64_t> stop_token_ids;  // ids of the sim tokenizer; stop_reason the id
  bool include_stop_str_in_output = false;   // vLLM's extension: keep the stop string
  // Top alternatives per token when logprobs were asked (completions `logprobs`: k; chat
  // `logprobs: true` with `top_logprobs`: k, default 0); empty = no logprobs.
  std::optional<std::int64_t> logprobs;
  std::optional<std::uint64_t> seed;  // the request's `seed`: its text no longer depends on arrival
  // Completions `echo: true`: the prompt text, sent before each choice's text (string prompts
  // without logprobs only; the rest is refused).
  std::optional<std::string> echo;
  // prefix_block_hashes() of the prompt's token ids (GenerationLimits::block_tokens > 0).
  std::vector<std::uint64_t> block_hashes;
  // The prompt's token ids after its last full block (block_tokens > 0): where the chain of
  // hashes continues into the generated tokens (append_block_hashes()).
  std::vector<std::int64_t> partial_block_ids;
};

struct RequestError {
  int status = 400;
  std::string message;
  std::string param;  // the offending field, e.g. "max_tokens"
};

struct GenerationLimits {
  std::int64_t max_model_len = 0;
  std::int64_t default_max_tokens = 16;
  std::string served_model;       // requests naming another model get 404
  std::int64_t block_tokens = 0;  // > 0: hash the prompt's full blocks (prefix caching)
};

struct ParseResult {
  std::optional<GenerationRequest> request;
  RequestError error;  // meaningful when request is empty
};

ParseResult parse_generation_request(std::string_view body, bool chat,
                                     const SimTokenizer& tokenizer, const GenerationLimits& limits);

// The prompt text of a /tokenize body ({"prompt": ...} or {"messages": [...]}) or an error.
struct TokenizeInput {
  std::optional<std::string> text;
  RequestError error;
};
TokenizeInput parse_tokenize_request(std::string_view body);

}  // namespace llmcap::sim
