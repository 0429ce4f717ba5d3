// StreamRecorder: turns one streamed (or non-streamed) OpenAI-compatible response into the
// fields of an analysis::RequestSample (docs/metrics.md §1): first/last token event arrival, token
// event count, ITL gaps and their maximum, usage tokens (or an estimated count), finish
// reason, HTTP status and the error class. It is the ResponseObserver of one exchange and also
// decides the deadline of every socket operation (first token, idle gap, total).
//
// Completeness (every request ends in exactly one class): a 2xx stream is ok only when the
// answer is whole — a finish_reason was seen, or [DONE] after usage. A stream whose framing
// ended first (close-delimited body, a clean last chunk, a Content-Length body, a reset) is a
// kTruncated error, whatever framing carried it; a non-streamed body likewise needs a
// finish_reason. Once the answer is whole ([DONE], or a finish chunk with usage), the request
// is over: the recorder gives the connection kAfterCompleteGraceNs for the end of its framing,
// then the exchange ends successfully (a server that holds the connection open after [DONE]
// costs nothing but the reuse of that connection), and E2E stays the last token event.
//
// Timestamps arrive as absolute steady-clock ns and are stored relative to the step epoch.
// Events are decoded straight from the read buffer (SseSink, no per-event copy).
// One per request; lives in the request's coroutine frame; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/api_kind.h"
#include "agent/http_client.h"
#include "agent/sse_parser.h"
#include "analysis/request_sample.h"

namespace llmcap::agent {

struct RecorderConfig {
  ApiKind api = ApiKind::kCompletions;
  bool streaming = true;
  std::int64_t epoch_ns = 0;                // absolute steady ns of the step's t = 0
  std::int64_t start_ns = 0;                // absolute steady ns when the agent began the request;
                                            // deadlines count from here (not from t_intended, so
                                            // the client's own lag never creates timeouts)
  std::int64_t first_token_timeout_ns = 0;  // 0 = none
  std::int64_t idle_timeout_ns = 0;         // gap between events after the first token; 0 = none
  std::int64_t total_timeout_ns = 0;        // 0 = none
  bool record_token_times = false;
  // Values that must never appear in an error message (credential header values, e.g. the
  // plan's api_key): replaced before any clipping, also when a clip cut one short. Not owned;
  // outlives the recorder (the step's list).
  const std::vector<std::string>* secrets = nullptr;
  // User abandonment (workload.abandon): the client gives up on the request at this absolute
  // steady time (-1: never), or once this many token events arrived (0: never), unless the
  // answer is whole by then. The request then ends as ErrorClass::kAbandoned and its connection
  // is closed, which is how a server learns that its user left.
  std::int64_t abandon_at_ns = -1;
  std::int32_t abandon_after_token_events = 0;
  // Multi-turn conversations (workload.conversation): when set, the answer's text (the first
  // choice's text / content, agent/chunk_decoder.h) is appended here as it arrives, so the next
  // turn can send it back. Not owned; outlives the recorder. Bounded by reply_max_bytes: text
  // beyond it is dropped and reply_truncated() says so.
  std::string* reply_text = nullptr;
  std::size_t reply_max_bytes = 16 * 1024 * 1024;
};

// The secret values of credential headers (Authorization, Proxy-Authorization, X-Api-Key,
// Api-Key): the whole value and, for "Bearer x"/"Basic x", x alone.
std::vector<std::string> credential_values(
    const std::vector<std::pair<std::string, std::string>>& headers);

// Error-message text as stored: secrets replaced by "[redacted]" (a secret cut at the end of
// `text` too), clipped to max_bytes, then invalid UTF-8 (also a character the clip split)
// replaced by U+FFFD, so every export can encode it.
std::string message_excerpt(std::string_view text, std::size_t max_bytes,
                            const std::vector<std::string>* secrets);

class StreamRecorder final : public ResponseObserver, private SseSink {
 public:
  // How long a complete answer waits for the end of its HTTP framing (see above).
  static constexpr std::int64_t kAfterCompleteGraceNs = 50'000'000;

  StreamRecorder(RecorderConfig config, analysis::RequestSample& sample);

  void on_headers(int status, std::string_view content_type, std::int64_t t_ns) override;
  bool on_body(std::string_view bytes, std::int64_t t_ns) override;
  ReadDeadline deadline() const override;

  // Completes the sample from the exchange outcome. Call once, after exchange() returns.
  void finish(const ExchangeResult& exchange);

  // Gaps between consecutive token events of this request (ns), for the pooled ITL histogram.
  const std::vector<std::int64_t>& itl_gaps_ns() const { return gaps_; }
  // The response's "id" (first one seen), e.g. "cmpl-…"; empty when the server sent none.
  const std::string& response_id() const { return response_id_; }
  bool done_seen() const { return done_seen_; }
  // The answer is whole: [DONE], or a finish_reason together with usage.
  bool complete() const { return complete_at_abs_ns_ >= 0; }
  // RecorderConfig::reply_text stopped growing at reply_max_bytes.
  bool reply_truncated() const { return reply_truncated_; }

 private:
  // SseSink: one event, decoded in place (the view lives only during the call).
  bool on_event(const SseEventView& event) override;
  void set_error(analysis::ErrorClass error, std::string message);
  void mark_complete_if_whole(std::int64_t t_abs_ns);
  std::int64_t rel(std::int64_t abs_ns) const {
    return abs_ns < 0 ? -1 : abs_ns - config_.epoch_ns;
  }

  RecorderConfig config_;
  analysis::RequestSample& sample_;
  SseParser parser_;
  std::vector<std::int64_t> gaps_;
  std::string response_id_;
  std::string error_body_;  // first bytes of a non-2xx body or a non-streamed body
  std::int64_t last_event_abs_ns_ = -1;
  std::int64_t last_token_abs_ns_ = -1;
  std::int64_t complete_at_abs_ns_ = -1;  // when the answer became whole; -1 = not yet
  std::int32_t usage_prompt_ = -1;
  std::int32_t usage_completion_ = -1;
  int status_ = 0;
  std::uint32_t data_events_ = 0;  // SSE events with data seen (tokens or not, [DONE] included)
  bool done_seen_ = false;
  bool ignore_rest_ = false;  // unparseable bytes after the whole answer: ignored
  bool error_set_ = false;
  bool first_token_seen_ = false;
  bool reply_truncated_ = false;
};

}  // namespace llmcap::agent
