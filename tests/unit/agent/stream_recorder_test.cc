#include "agent/stream_recorder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/agent/test_util.h"

namespace llmcap::agent {
namespace {

using analysis::ErrorClass;
using analysis::FinishReason;
using analysis::RequestSample;

constexpr std::int64_t kEpoch = 1'000'000'000;

RecorderConfig config(ApiKind api, bool streaming = true) {
  RecorderConfig c;
  c.api = api;
  c.streaming = streaming;
  c.epoch_ns = kEpoch;
  c.start_ns = kEpoch + 100;
  c.record_token_times = true;
  return c;
}

ExchangeResult ok_exchange(int status = 200) {
  ExchangeResult x;
  x.http_status = status;
  x.t_send_ns = kEpoch + 200;
  x.t_headers_ns = kEpoch + 300;
  x.t_end_ns = kEpoch + 100'000;
  x.connect_ns = 50;
  return x;
}

// Feeds a recorded stream one event per read, event k arriving at epoch + 1000·(k+1).
void feed_events(StreamRecorder& r, const std::string& stream, const std::string& sep) {
  std::size_t pos = 0;
  std::int64_t k = 0;
  while (pos < stream.size()) {
    std::size_t end = stream.find(sep, pos);
    end = end == std::string::npos ? stream.size() : end + sep.size();
    if (!r.on_body(std::string_view(stream).substr(pos, end - pos), kEpoch + 1000 * (++k))) break;
    pos = end;
  }
}

TEST(StreamRecorder, AbandonAfterTokenEventsStopsReadingAsAbandoned) {
  // vllm_completions.sse has 3 token events; the user leaves after the 2nd.
  RequestSample s;
  RecorderConfig c = config(ApiKind::kCompletions);
  c.abandon_after_token_events = 2;
  StreamRecorder r(c, s);
  r.on_headers(200, "text/event-stream", kEpoch + 300);
  feed_events(r, test::read_data("vllm_completions.sse"), "\n\n");
  ExchangeResult x = ok_exchange();
  x.t_end_ns = kEpoch + 3000;  // the client closed the connection at the 2nd token
  r.finish(x);
  EXPECT_EQ(s.error, ErrorClass::kAbandoned);
  EXPECT_EQ(s.error_message, "abandoned by the client after 2 token events");
  EXPECT_EQ(s.token_events, 2u);
  EXPECT_EQ(s.t_first_token_ns, 1000);
  // A whole answer before the N-th token is no abandonment: 5 > 3 token events.
  RequestSample whole;
  c.abandon_after_token_events = 5;
  StreamRecorder w(c, whole);
  w.on_headers(200, "text/event-stream", kEpoch + 300);
  feed_events(w, test::read_data("vllm_completions.sse"), "\n\n");
  w.finish(ok_exchange());
  EXPECT_TRUE(whole.ok()) << whole.error_message;
}

TEST(StreamRecorder, AbandonAtATimeIsADeadlineOfItsOwnClass) {
  RequestSample s;
  s.t_intended_ns = 500;
  RecorderConfig c = config(ApiKind::kCompletions);
  c.first_token_timeout_ns = 10'000'000;
  c.abandon_at_ns = kEpoch + 500 + 2'000'000;  // 2 ms after the intended send
  StreamRecorder r(c, s);
  EXPECT_EQ(r.deadline().at_ns, kEpoch + 500 + 2'000'000);
  EXPECT_EQ(r.deadline().on_expiry, ErrorClass::kAbandoned);
  // The client fired it (HttpClient reports the deadline's class).
  ExchangeResult x = ok_exchange();
  x.error = ErrorClass::kAbandoned;
  x.error_message = "read response headers: deadline passed";
  r.finish(x);
  EXPECT_EQ(s.error, ErrorClass::kAbandoned);
  EXPECT_EQ(s.error_message,
            "abandoned by the client 2 ms after its intended send time, after 0 token events");
  // A whole answer has no abandonment deadline (only the grace for the framing).
  RequestSample t;
  StreamRecorder w(c, t);
  w.on_headers(200, "text/event-stream", kEpoch + 300);
  feed_events(w, test::read_data("vllm_completions.sse"), "\n\n");
  EXPECT_TRUE(w.complete());
  EXPECT_EQ(w.deadline().on_expiry, ErrorClass::kNone);
}

TEST(StreamRecorder, VllmCompletionsFillsTheSample) {
  RequestSample s;
  s.t_intended_ns = 0;
  StreamRecorder r(config(ApiKind::kCompletions), s);
  r.on_headers(200, "text/event-stream", kEpoch + 300);
  feed_events(r, test::read_data("vllm_completions.sse"), "\n\n");
  r.finish(ok_exchange());
  EXPECT_TRUE(s.ok()) << s.error_message;
  EXPECT_EQ(s.token_events, 3u);  // the empty-text chunk is not a token event
  EXPECT_EQ(s.t_first_token_ns, 1000);
  EXPECT_EQ(s.t_last_token_ns, 4000);
  EXPECT_EQ(s.max_itl_ns, 2000);
  EXPECT_EQ(r.itl_gaps_ns(), (std::vector<std::int64_t>{2000, 1000}));
  EXPECT_EQ(s.token_times_ns, (std::vector<std::int64_t>{1000, 3000, 4000}));
  EXPECT_EQ(s.output_tokens, 4);  // usage wins over the event count
  EXPECT_FALSE(s.output_tokens_estimated);
  EXPECT_EQ(s.input_tokens, 12);
  EXPECT_EQ(s.finish_reason, FinishReason::kLength);
  EXPECT_EQ(s.http_status, 200);
  EXPECT_EQ(s.t_send_ns, 200);
  EXPECT_EQ(s.t_headers_ns, 300);
  EXPECT_EQ(s.connect_ns, 50);
  EXPECT_EQ(r.response_id(), "cmpl-7f3a");
  EXPECT_TRUE(r.done_seen());
}

TEST(StreamRecorder, ChatRoleChunkIsNotTheFirstToken) {
  RequestSample s;
  StreamRecorder r(config(ApiKind::kChat), s);
  r.on_headers(200, "text/event-stream; charset=utf-8", kEpoch);
  feed_events(r, test::read_data("llamacpp_chat.sse"), "\n\n");
  r.finish(ok_exchange());
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.t_first_token_ns, 2000);  // event 1 is role-only
  EXPECT_EQ(s.token_events, 2u);
  EXPECT_EQ(s.output_tokens, 2);
  EXPECT_EQ(s.input_tokens, 9);
}

TEST(StreamRecorder, NoUsageMeansEstimatedCount) {
  RequestSample s;
  StreamRecorder r(config(ApiKind::kCompletions), s);
  r.on_headers(200, "text/event-stream", kEpoch);
  r.on_body(
      "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
      "data: {\"choices\":[{\"text\":\"b\",\"finish_reason\":\"stop\"}]}\n\n",
      kEpoch + 10);
  r.finish(ok_exchange());
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.output_tokens, 2);
  EXPECT_TRUE(s.output_tokens_estimated);
  EXPECT_EQ(s.input_tokens, -1);
  EXPECT_EQ(s.max_itl_ns, 0);  // both events in one read
}

TEST(StreamRecorder, StreamWithoutDoneAndWithoutFinalBlankLine) {
  RequestSample s;
  StreamRecorder r(config(ApiKind::kCompletions), s);
  r.on_headers(200, "text/event-stream", kEpoch);
  r.on_body(test::read_data("llamacpp_completions_no_done.sse"), kEpoch + 500);
  r.finish(ok_exchange());
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.token_events, 3u);
  EXPECT_EQ(s.output_tokens, 3);
  EXPECT_FALSE(r.done_seen());
  EXPECT_EQ(s.t_last_token_ns, 100'000);  // the unterminated event counts at stream end
}

// A 200 event stream with no data event at all (garbage lines, comments only) answered nothing:
// a protocol error, not a zero-token success.
TEST(StreamRecorder, StreamWithoutAnyDataEventIsAProtocolError) {
  RequestSample s;
  StreamRecorder r(config(ApiKind::kCompletions), s);
  r.on_headers(200, "text/event-stream", kEpoch);
  EXPECT_TRUE(r.on_body(": ping\nnot sse at all\n\n", kEpoch + 10));
  r.finish(ok_exchange());
  EXPECT_EQ(s.error, ErrorClass::kProtocol);
  EXPECT_NE(s.error_message.find("stream ended without any SSE data event (23 body bytes)"),
            std::string::npos)
      << s.error_message;
  // [DONE] alone, without usage or a finish_reason, is no whole answer either.
  RequestSample d;
  StreamRecorder rd(config(ApiKind::kCompletions), d);
  rd.on_headers(200, "text/event-stream", kEpoch);
  EXPECT_TRUE(rd.on_body("data: [DONE]\n\n", kEpoch + 10));
  rd.finish(ok_exchange());
  EXPECT_EQ(d.error, ErrorClass::kTruncated) << d.error_message;
}

// HTTP 200, 3 of 24 tokens, then the stream ends cleanly (close, last chunk): no finish_reason,
// no usage, no [DONE] — a truncated error, never ok with 3 estimated tokens.
TEST(StreamRecorder, AStreamEndingBeforeItsFinishIsTruncated) {
  RequestSample s;
  StreamRecorder r(config(ApiKind::kCompletions), s);
  r.on_headers(200, "text/event-stream", kEpoch);
  for (int i = 0; i < 3; ++i)
    r.on_body("data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":null}]}\n\n",
              kEpoch + 10 * (i + 1));
  r.finish(ok_exchange());
  EXPECT_EQ(s.error, ErrorClass::kTruncated);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.token_events, 3u);
  EXPECT_NE(s.error_message.find("3 token event(s) without a finish_reason or [DONE]"),
            std::string::npos)
      << s.error_message;
  // Usage then [DONE] without any finish_reason is whole.
  RequestSample u;
  StreamRecorder ru(config(ApiKind::kCompletions), u);
  ru.on_headers(200, "text/event-stream", kEpoch);
  ru.on_body(
      "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n"
      "data: [DONE]\n\n",
      kEpoch + 10);
  ru.finish(ok_exchange());
  EXPECT_TRUE(u.ok()) << u.error_message;
}

TEST(StreamRecorder, AWholeAnswerEndsTheReadAfterAGraceAndStaysOk) {
  RequestSample s;
  RecorderConfig c = config(ApiKind::kCompletions);
  c.total_timeout_ns = 10'000'000'000;
  StreamRecorder r(c, s);
  r.on_headers(200, "text/event-stream", kEpoch);
  r.on_body("data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\n", kEpoch + 10);
  EXPECT_FALSE(r.complete());  // a finish without usage: usage may follow
  r.on_body("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n",
            kEpoch + 20);
  ASSERT_TRUE(r.complete());
  EXPECT_EQ(r.deadline().on_expiry, ErrorClass::kNone);  // a grace, not a timeout
  EXPECT_EQ(r.deadline().at_ns, kEpoch + 20 + StreamRecorder::kAfterCompleteGraceNs);
  EXPECT_TRUE(r.on_body(": the server keeps talking\n\n", kEpoch + 30));
  ExchangeResult x = ok_exchange();
  x.error = ErrorClass::kTruncated;  // then it resets: nothing was lost
  x.error_message = "connection closed mid-response";
  r.finish(x);
  EXPECT_TRUE(s.ok()) << s.error_message;
  EXPECT_EQ(s.output_tokens, 1);
}

TEST(StreamRecorder, ACutErrorBodyStaysItsHttpErrorAndANonStreamedBodyNeedsAFinish) {
  RequestSample s;
  StreamRecorder r(config(ApiKind::kCompletions), s);
  r.on_headers(503, "application/json", kEpoch);
  r.on_body("{\"error\":\"overloa", kEpoch + 10);
  ExchangeResult x = ok_exchange(503);
  x.error = ErrorClass::kTruncated;
  r.finish(x);
  EXPECT_EQ(s.error, ErrorClass::kHttp5xx) << s.error_message;

  RequestSample n;
  StreamRecorder rn(config(ApiKind::kCompletions, false), n);
  rn.on_headers(200, "application/json", kEpoch);
  rn.on_body(R"({"id":"cmpl-9","choices":[{"text":"abc"}]})", kEpoch + 5);
  rn.finish(ok_exchange());
  EXPECT_EQ(n.error, ErrorClass::kTruncated) << n.error_message;
}

TEST(StreamRecorder, MalformedJsonIsAProtocolErrorKeepingTheBytes) {
  RequestSample s;
  StreamRecorder r(config(ApiKind::kCompletions), s);
  r.on_headers(200, "text/event-stream", kEpoch);
  EXPECT_TRUE(r.on_body("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", kEpoch + 10));
  const std::string bad = "data: {\"choices\":[{\"text\":" + std::string(400, 'x') + "\n\n";
  EXPECT_FALSE(r.on_body(bad, kEpoch + 20));
  r.finish(ok_exchange());
  EXPECT_EQ(s.error, ErrorClass::kProtocol);
  EXPECT_NE(s.error_message.find("malformed JSON in SSE event"), std::string::npos);
  EXPECT_NE(s.error_message.find("{\"choices\":[{\"text\":xxx"), std::string::npos);
  EXPECT_LE(s.error_message.size(), 256u);
  EXPECT_EQ(s.token_events, 1u);
}

TEST(StreamRecorder, HttpErrorsAreClassified) {
  const std::pair<int, ErrorClass> cases[] = {
      {429, ErrorClass::kHttp429}, {404, ErrorClass::kHttp4xx}, {503, ErrorClass::kHttp5xx}};
  for (const auto& [status, cls] : cases) {
    RequestSample s;
    StreamRecorder r(config(ApiKind::kChat), s);
    r.on_headers(status, "application/json", kEpoch);
    r.on_body("{\"error\":\"busy\"}", kEpoch + 1);
    r.finish(ok_exchange(status));
    EXPECT_EQ(s.error, cls) << status;
    EXPECT_EQ(s.error_message, "HTTP " + std::to_string(status) + ": {\"error\":\"busy\"}");
    EXPECT_EQ(s.http_status, status);
  }
}

TEST(StreamRecorder, ErrorBodiesNeverLeakSecretsNotEvenCutOnes) {
  // Issue 23 #3: a 500 body that echoes the request's Authorization header. The body is kept to
  // 256 bytes and the message to 200, so a clip can cut the key: the whole key and a cut-off
  // prefix of it are both redacted, before any clipping.
  const std::string key = "sk-live-0123456789abcdefghijklmnop";
  const std::vector<std::string> secrets =
      credential_values({{"Authorization", "Bearer " + key}, {"Content-Type", "x"}});
  ASSERT_EQ(secrets.size(), 2u);
  for (const std::size_t pad : {0, 150, 180, 190, 230, 245}) {
    RequestSample s;
    RecorderConfig c = config(ApiKind::kChat);
    c.secrets = &secrets;
    StreamRecorder r(c, s);
    r.on_headers(500, "text/plain", kEpoch);
    r.on_body(std::string(pad, '.') + "echo: Authorization: Bearer " + key + " end", kEpoch + 1);
    r.finish(ok_exchange(500));
    EXPECT_EQ(s.error, ErrorClass::kHttp5xx);
    for (std::size_t n = 4; n <= key.size(); ++n)
      EXPECT_EQ(s.error_message.find(key.substr(0, n)), std::string::npos)
          << "pad " << pad << ": " << s.error_message;
  }
}

TEST(StreamRecorder, ErrorMessagesAreValidUtf8EvenWhenTheBodyIsNot) {
  // Issue 23 #11: a 503 body cut mid-character once emptied the NDJSON export.
  RequestSample s;
  StreamRecorder r(config(ApiKind::kChat), s);
  r.on_headers(503, "text/plain", kEpoch);
  std::string body(198, 'x');
  body += "\xE2\x82\xAC\xE2\x82\xAC";  // two euro signs; the 200-byte clip splits the first
  body += "\xFF\xC0\x80";              // and invalid bytes after it
  r.on_body(body, kEpoch + 1);
  r.finish(ok_exchange(503));
  EXPECT_EQ(s.error, ErrorClass::kHttp5xx);
  const nlohmann::json j = s.error_message;  // throws on invalid UTF-8 when dumped
  EXPECT_NO_THROW((void)j.dump());
  EXPECT_NE(s.error_message.find("\xEF\xBF\xBD"), std::string::npos);
  EXPECT_EQ(message_excerpt("ok \xC3\xA9", 100, nullptr), "ok \xC3\xA9");  // valid stays
  EXPECT_EQ(message_excerpt("\xED\xA0\x80", 100, nullptr), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(StreamRecorder, WrongContentTypeIsAProtocolError) {
  RequestSample s;
  StreamRecorder r(config(ApiKind::kChat), s);
  r.on_headers(200, "application/json", kEpoch);
  EXPECT_FALSE(r.on_body("{}", kEpoch + 1));
  r.finish(ok_exchange());
  EXPECT_EQ(s.error, ErrorClass::kProtocol);
  EXPECT_NE(s.error_message.find("text/event-stream"), std::string::npos);
}

TEST(StreamRecorder, ErrorEventInStream) {
  RequestSample s;
  StreamRecorder r(config(ApiKind::kChat), s);
  r.on_headers(200, "text/event-stream", kEpoch);
  EXPECT_FALSE(
      r.on_body("data: {\"error\":{\"message\":\"KV cache full\",\"code\":500}}\n\n", kEpoch + 1));
  r.finish(ok_exchange());
  EXPECT_EQ(s.error, ErrorClass::kHttp5xx);
  EXPECT_NE(s.error_message.find("KV cache full"), std::string::npos);
}

TEST(StreamRecorder, ExchangeErrorsPassThroughButAResetAfterDoneIsFine) {
  RequestSample s1;
  StreamRecorder r1(config(ApiKind::kCompletions), s1);
  r1.on_headers(200, "text/event-stream", kEpoch);
  r1.on_body("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", kEpoch + 10);
  ExchangeResult x = ok_exchange();
  x.error = ErrorClass::kTruncated;
  x.error_message = "connection closed mid-response";
  r1.finish(x);
  EXPECT_EQ(s1.error, ErrorClass::kTruncated);
  EXPECT_EQ(s1.token_events, 1u);  // what arrived is kept

  RequestSample s2;
  StreamRecorder r2(config(ApiKind::kCompletions), s2);
  r2.on_headers(200, "text/event-stream", kEpoch);
  r2.on_body(
      "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
      kEpoch + 10);
  r2.finish(x);
  EXPECT_TRUE(s2.ok());
}

TEST(StreamRecorder, DeadlinesFollowThePhase) {
  RequestSample s;
  RecorderConfig c = config(ApiKind::kCompletions);
  c.first_token_timeout_ns = 5000;
  c.idle_timeout_ns = 300;
  c.total_timeout_ns = 100'000;
  StreamRecorder r(c, s);
  EXPECT_EQ(r.deadline().at_ns, c.start_ns + 5000);
  EXPECT_EQ(r.deadline().on_expiry, ErrorClass::kTimeoutFirstToken);
  r.on_headers(200, "text/event-stream", kEpoch + 200);
  r.on_body("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", kEpoch + 1000);
  EXPECT_EQ(r.deadline().at_ns, kEpoch + 1300);
  EXPECT_EQ(r.deadline().on_expiry, ErrorClass::kTimeoutIdle);
  r.on_body(": ping\n\n", kEpoch + 1200);  // keep-alive comments reset the idle clock
  EXPECT_EQ(r.deadline().at_ns, kEpoch + 1500);
  RecorderConfig t = c;
  t.total_timeout_ns = 1000;
  RequestSample s2;
  StreamRecorder r2(t, s2);
  EXPECT_EQ(r2.deadline().on_expiry, ErrorClass::kTimeoutTotal);
  EXPECT_EQ(r2.deadline().at_ns, c.start_ns + 1000);
}

TEST(StreamRecorder, NonStreamingResponse) {
  RequestSample s;
  StreamRecorder r(config(ApiKind::kCompletions, false), s);
  r.on_headers(200, "application/json", kEpoch);
  r.on_body(R"({"id":"cmpl-9","choices":[{"text":"abc","finish_reason":"length"}],)", kEpoch + 5);
  r.on_body(R"("usage":{"prompt_tokens":7,"completion_tokens":3}})", kEpoch + 6);
  r.finish(ok_exchange());
  EXPECT_TRUE(s.ok()) << s.error_message;
  EXPECT_EQ(s.output_tokens, 3);
  EXPECT_EQ(s.input_tokens, 7);
  EXPECT_EQ(s.t_first_token_ns, -1);  // no TTFT without streaming
  EXPECT_EQ(s.finish_reason, FinishReason::kLength);
  EXPECT_EQ(r.response_id(), "cmpl-9");
  ASSERT_TRUE(s.e2e_ns());
  EXPECT_EQ(*s.e2e_ns(), 100'000);
}

}  // namespace
}  // namespace llmcap::agent
