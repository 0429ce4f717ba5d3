#include "agent/stream_recorder.h"

#include "net/http_message.h"

#include <algorithm>
#include <cctype>

#include "agent/chunk_decoder.h"

namespace llmcap::agent {

using analysis::ErrorClass;

namespace {

constexpr std::size_t kMaxMessageBytes = 256;
constexpr std::size_t kMaxNonStreamedBody = 16 * 1024 * 1024;

constexpr std::string_view kRedacted = "[redacted]";
constexpr std::size_t kMinSecretPrefix = 4;  // shorter cut-off tails are not worth hiding

// Length of the valid UTF-8 sequence at s[i], 0 when invalid or cut short.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
  }
  if (n == 3 && ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F))) return 0;
  if (n == 4 && ((c == 0xF0 && b(1) < 0x90) || (c == 0xF4 && b(1) > 0x8F))) return 0;
  return n;
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

void redact(std::string& s, const std::vector<std::string>* secrets) {
  if (!secrets) return;
  for (const auto& v : *secrets) {
    if (v.size() < kMinSecretPrefix) continue;
    for (std::size_t at = s.find(v); at != std::string::npos; at = s.find(v, at + kRedacted.size()))
      s.replace(at, v.size(), kRedacted);
    // A secret cut short by the end of the text (a clipped body): its prefix goes too.
    for (std::size_t k = std::min(v.size() - 1, s.size()); k >= kMinSecretPrefix; --k) {
      if (s.compare(s.size() - k, k, v, 0, k) == 0) {
        s.replace(s.size() - k, k, kRedacted);
        break;
      }
    }
  }
}

std::string clip(std::string_view s, std::size_t n) {
  return std::string(s.substr(0, std::min(s.size(), n)));
}

ErrorClass class_of_status(int status) {
  if (status == 429) return ErrorClass::kHttp429;
  if (status >= 400 && status < 500) return ErrorClass::kHttp4xx;
  if (status >= 500) return ErrorClass::kHttp5xx;
  return ErrorClass::kProtocol;  // 1xx/3xx: not an answer we can measure
}

}  // namespace

std::vector<std::string> credential_values(
    const std::vector<std::pair<std::string, std::string>>& headers) {
  std::vector<std::string> out;
  for (const auto& [name, value] : headers) {
    if (!net::is_credential_header(name)) continue;
    out.push_back(value);
    const auto space = value.find(' ');
    if (space != std::string::npos && space + 1 < value.size())
      out.push_back(value.substr(space + 1));
  }
  return out;
}

std::string message_excerpt(std::string_view text, std::size_t max_bytes,
                            const std::vector<std::string>* secrets) {
  std::string s(text);
  redact(s, secrets);
  if (s.size() > max_bytes) s.resize(max_bytes);
  return valid_utf8(s);
}

StreamRecorder::StreamRecorder(RecorderConfig config, analysis::RequestSample& sample)
    : config_(config), sample_(sample) {}

void StreamRecorder::set_error(ErrorClass error, std::string message) {
  if (error_set_) return;
  error_set_ = true;
  sample_.error = error;
  // Every message passes here: secrets out (before the clip), then valid UTF-8 (issue 23).
  sample_.error_message = message_excerpt(message, kMaxMessageBytes, config_.secrets);
}

void StreamRecorder::on_headers(int status, std::string_view content_type, std::int64_t t_ns) {
  status_ = status;
  (void)t_ns;
  if (status >= 200 && status < 300 && config_.streaming &&
      content_type.find("text/event-stream") == std::string_view::npos) {
    set_error(ErrorClass::kProtocol,
              "expected Content-Type text/event-stream, got '" + clip(content_type, 80) + "'");
  }
}

bool StreamRecorder::on_body(std::string_view bytes, std::int64_t t_ns) {
  if (error_set_) return false;
  if (status_ < 200 || status_ >= 300) {
    if (error_body_.size() < kMaxMessageBytes) error_body_.append(clip(bytes, kMaxMessageBytes));
    return true;
  }
  if (!config_.streaming) {
    if (error_body_.size() + bytes.size() > kMaxNonStreamedBody) {
      set_error(ErrorClass::kProtocol, "non-streamed response body exceeds 16 MiB");
      return false;
    }
    error_body_.append(bytes);
    return true;
  }
  if (done_seen_ || ignore_rest_) return true;  // bytes after [DONE] carry nothing we measure
  // Any bytes reset the idle clock (SSE comments are keep-alives); once the answer is whole only
  // a [DONE] is still looked for, and the grace deadline (deadline()) bounds the wait.
  if (!complete()) last_event_abs_ns_ = t_ns;
  if (!parser_.feed(bytes, t_ns, *this)) {
    if (complete() && !error_set_) {
      ignore_rest_ = true;  // unreadable bytes after the whole answer lose nothing
      return true;
    }
    // Either the parser failed (its error) or on_event() stopped it (error already set).
    if (!parser_.error().empty()) set_error(ErrorClass::kProtocol, parser_.error());
    return false;
  }
  return true;
}

bool StreamRecorder::on_event(const SseEventView& event) {
  ++data_events_;
  if (done_seen_) return true;  // bytes after [DONE] carry nothing we measure
  // The id is copied only until the first one is known (one heap copy per request, not per
  // event: vLLM ids are longer than the small-string buffer).
  std::string* reply = config_.reply_text && !reply_truncated_ ? config_.reply_text : nullptr;
  const DecodedChunk c =
      ChunkDecoder::decode(event.data, config_.api, true, response_id_.empty(), reply);
  if (reply && reply->size() > config_.reply_max_bytes) {
    reply->resize(config_.reply_max_bytes);
    reply_truncated_ = true;
  }
  if (c.done) {
    done_seen_ = true;
    mark_complete_if_whole(event.t_arrival_ns);
    return true;
  }
  if (complete()) return true;  // after the whole answer (finish + usage) only [DONE] matters
  if (c.malformed) {
    set_error(ErrorClass::kProtocol, "malformed JSON in SSE event (" + c.malformed_reason +
                                         "): " + message_excerpt(event.data, 200, config_.secrets));
    return false;
  }
  if (response_id_.empty() && !c.id.empty()) response_id_ = c.id;
  if (c.server_error) {
    ErrorClass ec = ErrorClass::kHttp5xx;
    if (c.server_error_code == 429)
      ec = ErrorClass::kHttp429;
    else if (c.server_error_code >= 400 && c.server_error_code < 500)
      ec = ErrorClass::kHttp4xx;
    set_error(ec, "error event in stream: " +
                      message_excerpt(c.server_error_message, 200, config_.secrets));
    return false;
  }
  if (c.is_token) {
    const std::int64_t t = event.t_arrival_ns;
    if (!first_token_seen_) {
      first_token_seen_ = true;
      sample_.t_first_token_ns = rel(t);
    } else {
      const std::int64_t gap = t - last_token_abs_ns_;
      gaps_.push_back(gap);
      sample_.max_itl_ns = std::max(sample_.max_itl_ns, gap);
    }
    last_token_abs_ns_ = t;
    sample_.t_last_token_ns = rel(t);
    ++sample_.token_events;
    if (config_.record_token_times) sample_.token_times_ns.push_back(rel(t));
  }
  if (c.finish_reason != analysis::FinishReason::kUnknown) sample_.finish_reason = c.finish_reason;
  if (c.prompt_tokens >= 0) usage_prompt_ = c.prompt_tokens;
  if (c.completion_tokens >= 0) usage_completion_ = c.completion_tokens;
  mark_complete_if_whole(event.t_arrival_ns);
  if (config_.abandon_after_token_events > 0 && !complete() &&
      sample_.finish_reason == analysis::FinishReason::kUnknown &&
      sample_.token_events >= static_cast<std::uint32_t>(config_.abandon_after_token_events)) {
    // The simulated user read enough and leaves: stop reading, the connection is closed.
    set_error(ErrorClass::kAbandoned, "abandoned by the client after " +
                                          std::to_string(sample_.token_events) + " token events");
    return false;
  }
  return true;
}

void StreamRecorder::mark_complete_if_whole(std::int64_t t_abs_ns) {
  if (complete()) return;
  const bool finished = sample_.finish_reason != analysis::FinishReason::kUnknown;
  // [DONE] ends the stream; a finish chunk with usage is the whole answer even if [DONE] never
  // comes (vLLM's usage chunk follows the finish chunk; llama.cpp puts usage in it).
  if (done_seen_ || (finished && usage_completion_ >= 0)) complete_at_abs_ns_ = t_abs_ns;
}

ReadDeadline StreamRecorder::deadline() const {
  if (complete())
    return ReadDeadline{complete_at_abs_ns_ + kAfterCompleteGraceNs, ErrorClass::kNone};
  ReadDeadline d;  // none
  auto consider = [&d](std::int64_t at, ErrorClass e) {
    if (at < d.at_ns) d = ReadDeadline{at, e};
  };
  if (config_.total_timeout_ns > 0)
    consider(config_.start_ns + config_.total_timeout_ns, ErrorClass::kTimeoutTotal);
  if (config_.abandon_at_ns >= 0) consider(config_.abandon_at_ns, ErrorClass::kAbandoned);
  if (!first_token_seen_) {
    if (config_.first_token_timeout_ns > 0 && config_.streaming)
      consider(config_.start_ns + config_.first_token_timeout_ns, ErrorClass::kTimeoutFirstToken);
  } else if (config_.idle_timeout_ns > 0) {
    consider(std::max(last_event_abs_ns_, last_token_abs_ns_) + config_.idle_timeout_ns,
             ErrorClass::kTimeoutIdle);
  }
  return d;
}

void StreamRecorder::finish(const ExchangeResult& x) {
  sample_.t_send_ns = rel(x.t_send_ns);
  sample_.connect_ns = x.connect_ns;
  sample_.tls_ns = x.tls_ns;
  sample_.t_headers_ns = rel(x.t_headers_ns);
  sample_.t_end_ns = rel(x.t_end_ns);
  sample_.http_status = static_cast<std::int16_t>(x.http_status);

  if (!error_set_ && x.error == ErrorClass::kNone && config_.streaming && status_ >= 200 &&
      status_ < 300) {
    // A last event the stream ended without a blank line for still counts.
    parser_.finish(x.t_end_ns, *this);
  }
  if (!error_set_) {
    const bool answered = status_ >= 200 && status_ < 300;
    if (x.error != ErrorClass::kNone) {
      const bool cut = x.error == ErrorClass::kProtocol || x.error == ErrorClass::kTruncated;
      if (cut && (complete() || done_seen_)) {
        // A reset after the whole answer lost nothing: the response was complete.
      } else if (x.error == ErrorClass::kTruncated && status_ > 0 && !answered) {
        // An error response whose body was cut is still that error.
        set_error(class_of_status(status_), "HTTP " + std::to_string(status_) + ": " +
                                                message_excerpt(error_body_, 200, config_.secrets));
      } else if (x.error == ErrorClass::kAbandoned) {
        set_error(x.error, "abandoned by the client " +
                               std::to_string((config_.abandon_at_ns - config_.epoch_ns -
                                               sample_.t_intended_ns) /
                                              1'000'000) +
                               " ms after its intended send time, after " +
                               std::to_string(sample_.token_events) + " token events");
      } else {
        set_error(x.error, x.error_message);
      }
    } else if (status_ < 200 || status_ >= 300) {
      set_error(class_of_status(status_), "HTTP " + std::to_string(status_) + ": " +
                                              message_excerpt(error_body_, 200, config_.secrets));
    } else if (config_.streaming && data_events_ == 0) {
      // A 2xx event stream that ended without one data event (not even [DONE]) answered
      // nothing: counting it ok would add a zero-token success to goodput.
      set_error(ErrorClass::kProtocol, "stream ended without any SSE data event (" +
                                           std::to_string(parser_.bytes_seen()) + " body bytes)");
    } else if (!config_.streaming) {
      const DecodedChunk c =
          ChunkDecoder::decode(error_body_, config_.api, false, true, config_.reply_text);
      if (config_.reply_text && config_.reply_text->size() > config_.reply_max_bytes) {
        config_.reply_text->resize(config_.reply_max_bytes);
        reply_truncated_ = true;
      }
      if (c.malformed) {
        set_error(ErrorClass::kProtocol, "malformed JSON response (" + c.malformed_reason + "): " +
                                             message_excerpt(error_body_, 200, config_.secrets));
      } else if (c.server_error) {
        set_error(
            class_of_status(c.server_error_code >= 400 ? c.server_error_code : 500),
            "error response: " + message_excerpt(c.server_error_message, 200, config_.secrets));
      } else if (c.finish_reason == analysis::FinishReason::kUnknown) {
        set_error(ErrorClass::kTruncated, "response without a finish_reason (" +
                                              std::to_string(error_body_.size()) + " body bytes)");
      } else {
        response_id_ = c.id;
        sample_.finish_reason = c.finish_reason;
        usage_prompt_ = c.prompt_tokens;
        usage_completion_ = c.completion_tokens;
      }
    }
  }
  if (!error_set_ && config_.streaming &&
      sample_.finish_reason == analysis::FinishReason::kUnknown &&
      !(done_seen_ && usage_completion_ >= 0)) {
    // The framing ended (close, last chunk, Content-Length, or a reset after a bare [DONE])
    // before the answer did: no finish_reason, and no [DONE] after usage.
    set_error(ErrorClass::kTruncated, "stream ended after " + std::to_string(sample_.token_events) +
                                          " token event(s) without a finish_reason" +
                                          (done_seen_ ? " ([DONE] without usage)" : " or [DONE]"));
  }
  sample_.input_tokens = usage_prompt_;
  if (usage_completion_ >= 0) {
    sample_.output_tokens = usage_completion_;
    sample_.output_tokens_estimated = false;
  } else if (config_.streaming) {
    // docs/metrics.md §1.3: without usage, count token events and say the count is estimated.
    sample_.output_tokens = static_cast<std::int32_t>(sample_.token_events);
    sample_.output_tokens_estimated = true;
  } else {
    sample_.output_tokens = -1;
    sample_.output_tokens_estimated = false;
  }
}

}  // namespace llmcap::agent
