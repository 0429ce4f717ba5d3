// TokenizeResponse: reads the token count out of a target's /tokenize response body, for the
// input-length calibration (docs/metrics.md §9.1). Two dialects are understood:
//   vLLM       request {"model", "prompt"}  -> {"count": N, "tokens": [...], ...}
//   llama.cpp  request {"content"}          -> {"tokens": [...]}
// A real llama-server answers the vLLM-shaped request with 200 {"tokens": []}: it reads only
// "content" and tokenises nothing. An empty list for a non-empty text is therefore "this
// request shape was not understood", not "zero tokens" (found by the real-server lane,
// tests/real/); the caller then tries the next shape. Pure and stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace llmcap::agent {

struct TokenizeResponse {
  // Token count of `text_bytes` bytes of text, or -1 when the body is not JSON, has neither
  // "count" nor "tokens", or claims 0 tokens for a non-empty text.
  static std::int32_t count(std::string_view body, std::size_t text_bytes);
};

}  // namespace llmcap::agent
