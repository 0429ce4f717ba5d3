// ChunkDecoder: decodes the `data:` payload of one OpenAI-compatible streaming event (or a whole
// non-streaming response body) into what measurement needs (docs/metrics.md §1.2): does it carry a
// generated token, finish reason, usage, response id, an in-stream error.
//
// Token rule (docs/metrics.md §1.2): completions: some choices[i].text non-empty; chat: some
// choices[i].delta.content, delta.reasoning_content or delta.reasoning non-empty. Role-only,
// empty, finish-only and usage-only chunks are not tokens. Usage may sit in the last chunk
// that still has choices (llama.cpp) or in a separate `choices: []` chunk (vLLM); both read.
//
// Cost: one pass of a hand-rolled validating scanner per chunk (same acceptance as nlohmann's
// strict parser, same answers as a DOM reading), no allocation unless the id or an error
// message is long: ≈ 1,600 instructions for a 200-byte vLLM chunk (was ≈ 22,000 with a
// nlohmann SAX pass and 33,000 with a DOM; bench/RESULTS.md, "Agent hot path").
// Stateless; decode() is thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "agent/api_kind.h"
#include "analysis/request_sample.h"

namespace llmcap::agent {

struct DecodedChunk {
  bool done = false;             // the `[DONE]` sentinel
  bool malformed = false;        // not JSON / not an object: a protocol error of the request
  std::string malformed_reason;  // parser message when malformed
  bool is_token = false;         // carries ≥ 1 generated token (metrics.md §1.2)
  std::uint32_t text_bytes = 0;  // bytes of generated text in this chunk
  analysis::FinishReason finish_reason = analysis::FinishReason::kUnknown;  // kUnknown = none
  std::int32_t prompt_tokens = -1;      // usage.prompt_tokens when present
  std::int32_t completion_tokens = -1;  // usage.completion_tokens when present
  std::string id;                       // top-level "id" when present
  bool server_error = false;            // top-level "error" object/string
  int server_error_code = 0;            // error.code when numeric
  std::string server_error_message;     // error.message (or the error string)
};

class ChunkDecoder {
 public:
  // Decodes one SSE event's data (streaming) or a whole JSON body (non-streaming: then
  // choices[].message.content / choices[].text count as the generated text).
  // want_id = false skips copying the top-level "id" (DecodedChunk::id stays empty): a stream
  // recorder that already has the response id saves a heap copy per event.
  // content_out (multi-turn conversations): when given, the generated answer text of the first
  // choice (completions choices[0].text, chat delta/message .content; reasoning is not part of
  // the answer a conversation sends back) is appended to it, decoded (escapes resolved). A
  // malformed chunk appends nothing.
  static DecodedChunk decode(std::string_view data, ApiKind api, bool streaming = true,
                             bool want_id = true, std::string* content_out = nullptr);
};

}  // namespace llmcap::agent
