#include "bench/firehose_server.h"

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "analysis/log_histogram.h"
#include "net/http_server.h"

namespace llmcap::bench {

namespace asio = boost::asio;
using net::HttpRequest;
using net::HttpResponse;
using net::ResponseStream;
using Result = asio::awaitable<std::optional<HttpResponse>>;

struct FirehoseState {
  FirehoseOptions options;
  std::unique_ptr<net::HttpServer> server;
  // Pre-built events: one token event, and events_per_write of them back to back.
  std::string completions_event;
  std::string chat_event;
  std::string completions_block;
  std::string chat_block;
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> events{0};
  std::atomic<std::int64_t> max_lag_ns{0};
  // Paced mode, io thread only: |gap between this stream's consecutive writes − interval|, the
  // server's own ITL error (the client cannot measure a gap better than the server made it).
  analysis::LogHistogram gap_error_ns;
};

std::string vllm_token_event(bool chat, const std::string& model) {
  if (chat)
    return R"(data: {"id":"chatcmpl-firehose","object":"chat.completion.chunk","created":1733100000,"model":")" +
           model +
           R"(","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]})"
           "\n\n";
  return R"(data: {"id":"cmpl-firehose","object":"text_completion","created":1733100000,"model":")" +
         model +
         R"(","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null})"
         "\n\n";
}
std::string vllm_final_events(bool chat, std::int64_t prompt_tokens, std::int64_t n) {
  const std::string usage = R"("usage":{"prompt_tokens":)" + std::to_string(prompt_tokens) +
                            R"(,"completion_tokens":)" + std::to_string(n) + R"(,"total_tokens":)" +
                            std::to_string(prompt_tokens + n) + "}";
  const std::string finish =
      chat
          ? R"(data: {"id":"chatcmpl-firehose","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}]})"
          : R"(data: {"id":"cmpl-firehose","object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"length"}]})";
  return finish + "\n\n" + R"(data: {"id":"firehose","choices":[],)" + usage + "}\n\n" +
         "data: [DONE]\n\n";
}

std::optional<std::int64_t> max_tokens_in(std::string_view body) {
  constexpr std::string_view kKey = "\"max_tokens\"";
  const auto at = body.find(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t i = at + kKey.size();
  while (i < body.size() && (body[i] == ' ' || body[i] == ':')) ++i;
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(body.data() + i, body.data() + body.size(), v);
  if (ec != std::errc() || v < 0) return std::nullopt;
  return v;
}

namespace {

using StatePtr = std::shared_ptr<FirehoseState>;

Result stream_tokens(StatePtr s, HttpRequest& req, ResponseStream& st, bool chat) {
  const auto mt = max_tokens_in(req.body);
  if (!mt && req.body.find("\"max_tokens\"") != std::string::npos)
    co_return HttpResponse::json(
        400, R"({"error":{"message":"max_tokens: must be a non-negative integer"}})");
  const std::int64_t n = mt.value_or(s->options.default_max_tokens);
  // Rough prompt length so usage.prompt_tokens is plausible (≈ 4 bytes per token).
  const std::int64_t prompt_tokens = static_cast<std::int64_t>(req.body.size() / 4);
  s->requests.fetch_add(1, std::memory_order_relaxed);
  net::HeaderList headers;  // built outside co_await (GCC 12 rejects a braced list there)
  headers.emplace_back("Content-Type", "text/event-stream");
  headers.emplace_back("Cache-Control", "no-cache");
  if (!co_await st.start(200, std::move(headers))) co_return std::nullopt;
  const std::string& one = chat ? s->chat_event : s->completions_event;
  if (s->options.interval_ms <= 0) {
    const std::string& block = chat ? s->chat_block : s->completions_block;
    const std::int64_t per = s->options.events_per_write;
    std::int64_t left = n;
    while (left >= per) {
      if (!co_await st.write(block)) co_return std::nullopt;
      left -= per;
      s->events.fetch_add(static_cast<std::uint64_t>(per), std::memory_order_relaxed);
    }
    if (left > 0) {
      if (!co_await st.write(
              std::string_view(block).substr(0, one.size() * static_cast<std::size_t>(left))))
        co_return std::nullopt;
      s->events.fetch_add(static_cast<std::uint64_t>(left), std::memory_order_relaxed);
    }
  } else {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto interval = std::chrono::milliseconds(s->options.interval_ms);
    auto due = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point last_write{};
    for (std::int64_t k = 0; k < n; ++k) {
      due += interval;
      timer.expires_at(due);
      co_await timer.async_wait(asio::use_awaitable);
      const auto now = std::chrono::steady_clock::now();
      const auto lag = std::chrono::duration_cast<std::chrono::nanoseconds>(now - due).count();
      if (k > 0) {
        const auto gap = std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_write);
        const auto err = std::chrono::duration_cast<std::chrono::nanoseconds>(gap - interval);
        s->gap_error_ns.record(static_cast<double>(err.count() < 0 ? -err.count() : err.count()));
      }
      last_write = now;
      auto seen = s->max_lag_ns.load(std::memory_order_relaxed);
      while (lag > seen && !s->max_lag_ns.compare_exchange_weak(seen, lag)) {
      }
      if (!co_await st.write(one)) co_return std::nullopt;
      s->events.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (!co_await st.write(vllm_final_events(chat, prompt_tokens, n))) co_return std::nullopt;
  co_await st.finish();
  co_return std::nullopt;
}

Result handle(StatePtr s, HttpRequest& req, ResponseStream& st) {
  if (req.method == "POST" && req.path == "/v1/completions")
    co_return co_await stream_tokens(s, req, st, false);
  if (req.method == "POST" && req.path == "/v1/chat/completions")
    co_return co_await stream_tokens(s, req, st, true);
  if (req.method == "GET" && req.path == "/v1/models")
    co_return HttpResponse::json(
        200, R"({"object":"list","data":[{"id":")" + s->options.model + R"(","object":"model"}]})");
  co_return HttpResponse::json(404, R"({"error":{"message":"not found"}})");
}

}  // namespace

FirehoseServer::FirehoseServer(asio::io_context& io, FirehoseOptions options)
    : state_(std::make_shared<FirehoseState>()) {
  state_->options = std::move(options);
  net::HttpServerOptions ho;
  ho.address = state_->options.address;
  ho.port = state_->options.port;
  ho.max_connections = state_->options.max_connections;
  ho.server_header = "llmcap-firehose";
  // Held streams in paced mode may sit idle between requests for a while.
  ho.idle_timeout = std::chrono::milliseconds(120'000);
  StatePtr s = state_;
  state_->server = std::make_unique<net::HttpServer>(
      io, ho, [s](HttpRequest& req, ResponseStream& st) { return handle(s, req, st); });
}

FirehoseServer::~FirehoseServer() { stop(); }

void FirehoseServer::start() {
  auto& o = state_->options;
  if (o.interval_ms < 0) throw std::invalid_argument("interval_ms: must be >= 0");
  if (o.events_per_write < 1) throw std::invalid_argument("events_per_write: must be >= 1");
  if (o.default_max_tokens < 0) throw std::invalid_argument("default_max_tokens: must be >= 0");
  if (o.max_connections < 1) throw std::invalid_argument("max_connections: must be >= 1");
  state_->completions_event = vllm_token_event(false, o.model);
  state_->chat_event = vllm_token_event(true, o.model);
  state_->completions_block.clear();
  state_->chat_block.clear();
  for (int i = 0; i < o.events_per_write; ++i) {
    state_->completions_block += state_->completions_event;
    state_->chat_block += state_->chat_event;
  }
  state_->server->start();
}

std::uint16_t FirehoseServer::port() const { return state_->server->port(); }
void FirehoseServer::stop() {
  if (state_ && state_->server) state_->server->stop();
}
std::uint64_t FirehoseServer::requests() const { return state_->requests.load(); }
std::uint64_t FirehoseServer::events_sent() const { return state_->events.load(); }
std::int64_t FirehoseServer::max_pacing_lag_ns() const { return state_->max_lag_ns.load(); }
double FirehoseServer::pacing_gap_error_ns(double q) const {
  return state_->gap_error_ns.count() == 0 ? 0.0 : state_->gap_error_ns.quantile(q);
}

}  // namespace llmcap::bench
