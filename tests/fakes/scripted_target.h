// ScriptedTarget: a fake OpenAI-compatible streaming server whose token schedule is known
// exactly, for timing-accuracy and fault tests of the agent. It runs net::HttpServer on its
// own io_context thread (never the agent's) and records, for every response, when it wrote
// each token event (steady_clock, the same clock the agent uses), so tests compare the agent's
// measurements against the truth rather than against the plan.
//
// Schedule: first token event at receipt + ttft, token k at receipt + ttft + k × itl (absolute
// timers, no drift). Shapes: vLLM (usage in a separate `choices: []` chunk) or llama.cpp (usage
// in the final chunk that still has choices); chat streams start with a role-only chunk.
// Misbehaviour on demand: HTTP status (429/500), slow headers, stall, reset, malformed chunk,
// no [DONE], no usage, CRLF line ends, SSE comments, events split across writes, 429 with
// Retry-After, a 200 HTML page, a stream that never ends; a cycle of scripts mixes faulty and
// good requests in one step. Raw wire-level faults live in tests/fakes/raw_target.h.
//
// Endpoints: POST /v1/completions, POST /v1/chat/completions, GET /v1/models, POST /tokenize
// (optional). Its tokenizer: tokens = words × tokens_per_word (rounded) + bos_tokens; chat
// adds chat_template_tokens.
//
// Thread safety: set_script(), records() and counters may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmcap::fakes {

struct Script {
  std::int64_t ttft_us = 50'000;
  std::int64_t itl_us = 20'000;
  // Stream n's whole schedule is shifted by (n × 7919 µs) mod phase_spread_us, so concurrent
  // streams do not all emit in the same instant (0 = synchronised, like one decode batch).
  std::int64_t phase_spread_us = 0;
  std::int32_t tokens = 16;       // token events to send (≤ max_tokens of the request)
  bool honour_max_tokens = true;  // send min(tokens, max_tokens) events
  bool llama_cpp_usage = false;   // usage in the final chunk with choices (else vLLM shape)
  bool send_usage = true;
  bool send_done = true;
  bool crlf = false;
  bool comments = false;                 // a ": ping" comment before each event
  bool split_events = false;             // each event in two writes, 1 ms apart
  int status = 200;                      // non-200: JSON error body, no stream
  std::int64_t headers_delay_us = 0;     // before the status line
  std::int32_t stall_after_tokens = -1;  // stop sending after n tokens for stall_us
  std::int64_t stall_us = 60'000'000;
  std::int32_t reset_after_tokens = -1;      // TCP reset after n tokens
  std::int32_t malformed_after_tokens = -1;  // send a malformed JSON event after n tokens
  std::string malformed_payload;             // data of that event (empty: truncated JSON)
  std::string retry_after;                   // non-200: Retry-After header value, when set
  bool html_page = false;                    // 200 text/html page instead of a stream
  bool endless = false;  // token events every itl forever (no finish, usage or [DONE])
  // Token k of stream n is " s<n>t<k>" instead of " tok", so an answer sent back by the client
  // (a conversation's next turn) can be told from any other (numbered_reply()).
  bool numbered_tokens = false;
};

// The whole answer text of stream n with numbered_tokens and `tokens` tokens.
std::string numbered_reply(std::uint64_t stream, std::int32_t tokens);

struct ScriptedTargetOptions {
  bool tokenize_endpoint = true;
  double tokens_per_word = 1.0;
  std::int32_t bos_tokens = 1;
  std::int32_t chat_template_tokens = 7;
  std::string model = "scripted-model";
  std::int64_t idle_timeout_ms = 60'000;  // server closes kept-alive connections idle this long
  std::uint16_t port = 0;  // listen port; 0 picks a free one (restart tests reuse one)
};

// What the fake did for one completion request.
struct ServedStream {
  std::string id;                            // response id sent in every chunk
  std::int64_t t_received_ns = 0;            // steady ns when the handler started
  std::vector<std::int64_t> token_write_ns;  // steady ns just before each token write
  // steady ns when each token write completed; the bytes reached the kernel in
  // [token_write_ns[k], token_written_ns[k]] (the server's own uncertainty under load).
  std::vector<std::int64_t> token_written_ns;
  std::int32_t prompt_tokens = 0;
  std::string prompt;  // the prompt text received (chat: the messages' contents, space-joined)
  std::string body;    // the request body as received
  std::int32_t max_tokens = -1;
  bool ignore_eos = false;
  bool streamed = false;
};

class ScriptedTarget {
 public:
  explicit ScriptedTarget(Script script = {}, ScriptedTargetOptions options = {});
  ~ScriptedTarget();
  ScriptedTarget(const ScriptedTarget&) = delete;
  ScriptedTarget& operator=(const ScriptedTarget&) = delete;

  std::uint16_t port() const;
  std::string base_url() const;  // "http://127.0.0.1:PORT"
  void set_script(const Script& script);
  // Completion request n (counted from 0 over the fake's life) follows cycle[n % size]: mixes
  // faulty and good requests in one step. set_script(s) is set_script_cycle({s}).
  void set_script_cycle(std::vector<Script> cycle);
  std::vector<ServedStream> records() const;
  std::uint64_t completion_requests() const;
  std::uint64_t tokenize_requests() const;
  // Token count the fake's tokenizer gives a text (whitespace-separated words).
  std::int32_t count_tokens(const std::string& text) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace llmcap::fakes
