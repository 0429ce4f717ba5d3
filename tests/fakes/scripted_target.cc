#include "tests/fakes/scripted_target.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "net/http_server.h"

namespace llmcap::fakes {

namespace asio = boost::asio;
using json = nlohmann::json;
using net::HttpRequest;
using net::HttpResponse;
using net::ResponseStream;

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

asio::awaitable<void> sleep_until(std::int64_t abs_ns) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  t.expires_at(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(abs_ns)));
  co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
}

std::string token_text(const Script& s, std::uint64_t stream, std::int32_t k) {
  if (!s.numbered_tokens) return " tok";
  return " s" + std::to_string(stream) + "t" + std::to_string(k);
}

std::int32_t words_in(const std::string& text) {
  std::int32_t n = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

}  // namespace

struct ScriptedTarget::Impl : std::enable_shared_from_this<ScriptedTarget::Impl> {
  Impl(Script s, ScriptedTargetOptions o) : options(std::move(o)), cycle{s} {}

  // An io_context whose pending handlers can be destroyed while this Impl is still whole: a
  // stalled handler is suspended on a timer, and its frame holds a shared_ptr to this Impl (the
  // handler's weak.lock()), so without that the Impl, the io_context and every frame leak.
  struct Io : asio::io_context {
    using asio::io_context::io_context;
    void destroy_pending_handlers() { shutdown(); }  // the io_context's destructor does the same
  };
  Io io{1};
  std::unique_ptr<net::HttpServer> server;
  std::thread thread;
  ScriptedTargetOptions options;

  mutable std::mutex mu;
  std::vector<Script> cycle;         // GUARDED_BY(mu); never empty
  std::vector<ServedStream> served;  // GUARDED_BY(mu)
  std::uint64_t next_id = 0;         // GUARDED_BY(mu)
  std::uint64_t tokenize_count = 0;  // GUARDED_BY(mu)

  std::int32_t count_tokens(const std::string& text) const {
    return static_cast<std::int32_t>(std::lround(words_in(text) * options.tokens_per_word)) +
           options.bos_tokens;
  }

  asio::awaitable<std::optional<HttpResponse>> handle(HttpRequest& req, ResponseStream& out);
  asio::awaitable<std::optional<HttpResponse>> completion(HttpRequest& req, ResponseStream& out,
                                                          bool chat);
};

asio::awaitable<std::optional<HttpResponse>> ScriptedTarget::Impl::handle(HttpRequest& req,
                                                                          ResponseStream& out) {
  if (req.method == "GET" && req.path == "/v1/models") {
    json body{{"object", "list"},
              {"data", json::array({json{{"id", options.model}, {"object", "model"}}})}};
    co_return HttpResponse::json(200, body.dump());
  }
  if (req.method == "POST" && req.path == "/tokenize") {
    if (!options.tokenize_endpoint) co_return HttpResponse::json(404, R"({"error":"not found"})");
    json doc = json::parse(req.body, nullptr, false);
    std::string text;
    if (doc.is_object() && doc.contains("prompt") && doc["prompt"].is_string())
      text = doc["prompt"];
    else if (doc.is_object() && doc.contains("content") && doc["content"].is_string())
      text = doc["content"];
    else
      co_return HttpResponse::json(400, R"({"error":"need prompt"})");
    {
      std::lock_guard lock(mu);
      ++tokenize_count;
    }
    co_return HttpResponse::json(200, json{{"count", count_tokens(text)}}.dump());
  }
  if (req.method == "POST" && req.path == "/v1/completions")
    co_return co_await completion(req, out, false);
  if (req.method == "POST" && req.path == "/v1/chat/completions")
    co_return co_await completion(req, out, true);
  co_return HttpResponse::json(404, R"({"error":"no route"})");
}

asio::awaitable<std::optional<HttpResponse>> ScriptedTarget::Impl::completion(HttpRequest& req,
                                                                              ResponseStream& out,
                                                                              bool chat) {
  const std::int64_t t0 = now_ns();
  Script s;
  ServedStream rec;
  std::size_t slot = 0;
  std::uint64_t stream_no = 0;
  {
    std::lock_guard lock(mu);
    s = cycle[next_id % cycle.size()];
    stream_no = next_id++;
    rec.id = std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(stream_no);
  }
  rec.t_received_ns = t0;
  const std::int64_t phase_ns =
      s.phase_spread_us > 0
          ? static_cast<std::int64_t>((stream_no * 7919) %
                                      static_cast<std::uint64_t>(s.phase_spread_us)) *
                1000
          : 0;
  json doc = json::parse(req.body, nullptr, false);
  if (!doc.is_object()) co_return HttpResponse::json(400, R"({"error":"body is not JSON"})");
  std::string prompt_text;
  if (chat) {
    if (doc.contains("messages") && doc["messages"].is_array())
      for (const auto& m : doc["messages"])
        if (m.is_object() && m.contains("content") && m["content"].is_string())
          prompt_text += m["content"].get<std::string>() + " ";
  } else if (doc.contains("prompt") && doc["prompt"].is_string()) {
    prompt_text = doc["prompt"];
  }
  rec.prompt_tokens = count_tokens(prompt_text) + (chat ? options.chat_template_tokens : 0);
  rec.prompt = prompt_text;
  rec.body = req.body;
  if (doc.contains("max_tokens") && doc["max_tokens"].is_number_integer())
    rec.max_tokens = doc["max_tokens"];
  rec.ignore_eos = doc.value("ignore_eos", false);
  rec.streamed = doc.value("stream", false);
  std::int32_t n = s.tokens;
  if (s.honour_max_tokens && rec.max_tokens >= 0) n = std::min(n, rec.max_tokens);
  {
    std::lock_guard lock(mu);
    slot = served.size();
    served.push_back(rec);
  }
  auto record_write = [this, slot](std::int64_t before, std::int64_t after) {
    std::lock_guard lock(mu);
    served[slot].token_write_ns.push_back(before);
    served[slot].token_written_ns.push_back(after);
  };

  if (s.headers_delay_us > 0) co_await sleep_until(t0 + s.headers_delay_us * 1000);
  if (s.status != 200) {
    json err{{"error", {{"message", "scripted failure"}, {"code", s.status}}}};
    HttpResponse r = HttpResponse::json(s.status, err.dump());
    if (!s.retry_after.empty()) r.with_header("Retry-After", s.retry_after);
    co_return r;
  }
  if (s.html_page) {
    // What a proxy login page or a wrong base URL returns: 200, but not an event stream.
    co_return HttpResponse::text(200, "<html><body><h1>Sign in</h1>data: not sse</body></html>\n",
                                 "text/html; charset=utf-8");
  }
  const json usage{{"prompt_tokens", rec.prompt_tokens},
                   {"completion_tokens", n},
                   {"total_tokens", rec.prompt_tokens + n}};
  auto chunk = [&](const std::string& text, const char* finish, bool with_usage) {
    json c{{"id", rec.id},
           {"object", chat ? "chat.completion.chunk" : "text_completion"},
           {"created", 0},
           {"model", options.model}};
    json choice{{"index", 0}, {"finish_reason", finish ? json(finish) : json(nullptr)}};
    if (chat)
      choice["delta"] = json{{"content", text}};
    else
      choice["text"] = text;
    c["choices"] = json::array({choice});
    if (with_usage) c["usage"] = usage;
    return c.dump();
  };

  if (!rec.streamed) {
    json c{{"id", rec.id},
           {"object", chat ? "chat.completion" : "text_completion"},
           {"model", options.model}};
    std::string text;
    for (std::int32_t i = 0; i < n; ++i) text += token_text(s, stream_no, i);
    co_await sleep_until(t0 + (s.ttft_us + std::max(0, n - 1) * s.itl_us) * 1000);
    json choice{{"index", 0}, {"finish_reason", "length"}};
    if (chat)
      choice["message"] = json{{"role", "assistant"}, {"content", text}};
    else
      choice["text"] = text;
    c["choices"] = json::array({choice});
    c["usage"] = usage;
    co_return HttpResponse::json(200, c.dump());
  }

  const std::string eol = s.crlf ? "\r\n" : "\n";
  auto frame = [&](const std::string& data) {
    std::string f;
    if (s.comments) f += ": ping" + eol;
    f += "data: " + data + eol + eol;
    return f;
  };
  auto send = [&](const std::string& bytes) -> asio::awaitable<bool> {
    if (!s.split_events || bytes.size() < 4) co_return co_await out.write(bytes);
    const std::size_t half = bytes.size() / 2;
    if (!(co_await out.write(std::string_view(bytes).substr(0, half)))) co_return false;
    co_await sleep_until(now_ns() + 1'000'000);
    co_return co_await out.write(std::string_view(bytes).substr(half));
  };

  // Built before the co_await: GCC 12 cannot keep an initializer_list's array across one.
  net::HeaderList headers;
  headers.emplace_back("Content-Type", "text/event-stream");
  headers.emplace_back("Cache-Control", "no-cache");
  if (!(co_await out.start(200, std::move(headers)))) co_return std::nullopt;
  if (chat) {
    // Role-only first chunk (not a token event, docs/metrics.md §1.2).
    json c{{"id", rec.id},
           {"object", "chat.completion.chunk"},
           {"model", options.model},
           {"choices", json::array({json{{"index", 0},
                                         {"delta", {{"role", "assistant"}, {"content", ""}}},
                                         {"finish_reason", nullptr}}})}};
    if (!(co_await send(frame(c.dump())))) co_return std::nullopt;
  }
  // Frames are built before the timed loop so the fake's per-event cost is one write.
  std::vector<std::string> frames;
  frames.reserve(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i) {
    const bool last = i == n - 1 && !s.endless;
    frames.push_back(frame(chunk(token_text(s, stream_no, i), last ? "length" : nullptr,
                                 last && s.send_usage && s.llama_cpp_usage)));
  }
  for (std::int32_t i = 0; i < n; ++i) {
    if (i == s.stall_after_tokens) co_await sleep_until(now_ns() + s.stall_us * 1000);
    if (i == s.reset_after_tokens) {
      out.reset();
      co_return std::nullopt;
    }
    if (i == s.malformed_after_tokens) {
      const std::string bad = s.malformed_payload.empty()
                                  ? "{\"id\": \"" + rec.id + "\", \"choices\": [{\"text\": \"tok"
                                  : s.malformed_payload;
      if (!(co_await send(frame(bad)))) co_return std::nullopt;
    }
    co_await sleep_until(t0 + phase_ns + (s.ttft_us + i * s.itl_us) * 1000);
    const std::int64_t before = now_ns();
    const bool sent = co_await send(frames[static_cast<std::size_t>(i)]);
    record_write(before, now_ns());
    if (!sent) co_return std::nullopt;
  }
  if (s.endless) {
    // A body that never ends: token events every itl until the client goes away.
    const std::string tok = frame(chunk(" tok", nullptr, false));
    for (std::int64_t i = n;; ++i) {
      co_await sleep_until(t0 + phase_ns + (s.ttft_us + i * s.itl_us) * 1000);
      const std::int64_t before = now_ns();
      const bool sent = co_await send(tok);
      record_write(before, now_ns());
      if (!sent) co_return std::nullopt;
    }
  }
  if (s.send_usage && !s.llama_cpp_usage) {
    json c{{"id", rec.id},
           {"object", chat ? "chat.completion.chunk" : "text_completion"},
           {"model", options.model},
           {"choices", json::array()},
           {"usage", usage}};
    if (!(co_await send(frame(c.dump())))) co_return std::nullopt;
  }
  if (s.send_done) {
    if (!(co_await send(frame("[DONE]")))) co_return std::nullopt;
  }
  co_await out.finish();
  co_return std::nullopt;
}

std::string numbered_reply(std::uint64_t stream, std::int32_t tokens) {
  Script s;
  s.numbered_tokens = true;
  std::string text;
  for (std::int32_t k = 0; k < tokens; ++k) text += token_text(s, stream, k);
  return text;
}

ScriptedTarget::ScriptedTarget(Script script, ScriptedTargetOptions options)
    : impl_(std::make_shared<Impl>(script, std::move(options))) {
  net::HttpServerOptions so;
  so.port = impl_->options.port;
  so.max_connections = 100'000;
  so.write_timeout = std::chrono::milliseconds(120'000);
  so.idle_timeout = std::chrono::milliseconds(impl_->options.idle_timeout_ms);
  std::weak_ptr<Impl> weak = impl_;
  impl_->server = std::make_unique<net::HttpServer>(
      impl_->io, so,
      [weak](HttpRequest& req,
             ResponseStream& out) -> asio::awaitable<std::optional<HttpResponse>> {
        auto self = weak.lock();
        if (!self) co_return HttpResponse::json(503, "{}");
        co_return co_await self->handle(req, out);
      });
  impl_->server->start();
  impl_->thread = std::thread([impl = impl_] {
    auto guard = asio::make_work_guard(impl->io);
    impl->io.run();
  });
}

ScriptedTarget::~ScriptedTarget() {
  impl_->server->stop();
  // Give sessions a moment to close, then stop the loop (stalled handlers hold timers).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  impl_->io.stop();
  impl_->thread.join();
  // Break the cycle Impl -> io_context -> suspended frames -> Impl (LeakSanitizer found it).
  impl_->server.reset();
  impl_->io.destroy_pending_handlers();
}

std::uint16_t ScriptedTarget::port() const { return impl_->server->port(); }
std::string ScriptedTarget::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port());
}
void ScriptedTarget::set_script(const Script& script) { set_script_cycle({script}); }
void ScriptedTarget::set_script_cycle(std::vector<Script> cycle) {
  if (cycle.empty()) cycle.emplace_back();
  std::lock_guard lock(impl_->mu);
  impl_->cycle = std::move(cycle);
}
std::vector<ServedStream> ScriptedTarget::records() const {
  std::lock_guard lock(impl_->mu);
  return impl_->served;
}
std::uint64_t ScriptedTarget::completion_requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->served.size();
}
std::uint64_t ScriptedTarget::tokenize_requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->tokenize_count;
}
std::int32_t ScriptedTarget::count_tokens(const std::string& text) const {
  return impl_->count_tokens(text);
}

}  // namespace llmcap::fakes
