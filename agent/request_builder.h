// RequestBuilder: builds the JSON body of an OpenAI-compatible completions/chat request.
//
// Streaming requests ask for usage (`stream_options.include_usage`, docs/metrics.md §1.3) so output
// tokens come from the server's tokenizer. Output length is enforced with max_tokens +
// ignore_eos (+ min_tokens when asked, docs/metrics.md §9.2). `extra_body` (a JSON object) is
// merged last at the top level, so a plan can override or add any field (e.g. "cache_prompt":
// false).
//
// Pure functions; thread-safe. Fails (as a value) when messages or extra_body are not valid
// JSON of the right shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agent/api_kind.h"
#include "agent/expected.h"

namespace llmcap::agent {

struct RequestBodySpec {
  ApiKind api = ApiKind::kCompletions;
  std::string model;
  std::string prompt;            // completions prompt; chat: becomes one user message if
                                 // messages_json is empty
  std::string messages_json;     // chat: a JSON array of {role, content}; empty = from prompt
  std::int32_t max_tokens = -1;  // -1: not sent
  std::optional<std::int32_t> min_tokens;  // sent only when set (vLLM extension)
  bool ignore_eos = false;                 // sent only when true (vLLM/llama.cpp extension)
  std::optional<double> temperature;       // sent when set
  bool stream = true;
  bool include_usage = true;    // stream_options.include_usage (streaming only)
  std::string extra_body_json;  // JSON object merged at the top level; empty = none
};

class RequestBuilder {
 public:
  // Returns the serialized body, or an error naming the bad field.
  static Expected<std::string> build(const RequestBodySpec& spec);
  // Checks that text is a JSON object (for validating extra_body once per step).
  static std::optional<std::string> check_json_object(const std::string& text,
                                                      const std::string& field_name);
};

}  // namespace llmcap::agent
