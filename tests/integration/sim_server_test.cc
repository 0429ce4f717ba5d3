// Integration tests of the simulated inference server: a real SimServer on 127.0.0.1:0 in this
// process, driven over HTTP by a small synchronous Beast client.
#include "sim/sim_server.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/time.h>
#include <algorithm>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <thread>
#include <vector>

#include "sim/batch_engine.h"
#include "sim/sim_model.h"

namespace llmcap::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Reply {
  int status = 0;
  std::string body;                                               // whole body (also for SSE)
  std::vector<std::pair<Clock::time_point, std::string>> chunks;  // chunk arrival, data
  std::string retry_after;
  std::string content_type;
  Clock::time_point sent;
  bool transport_error = false;  // reset / truncated
};

// One request on a fresh connection; records each chunk's arrival time.
Reply call(std::uint16_t port, http::verb verb, const std::string& target,
           const std::string& body = "", std::chrono::seconds timeout = std::chrono::seconds(20)) {
  Reply r;
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(timeout);
  beast::error_code ec;
  stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) {
    r.transport_error = true;
    return r;
  }
  // Synchronous Beast operations ignore tcp_stream's expiry: bound them with SO_RCVTIMEO.
  timeval tv{static_cast<time_t>(timeout.count()), 0};
  ::setsockopt(stream.socket().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  http::request<http::string_body> req(verb, target, 11);
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  r.sent = Clock::now();
  http::write(stream, req, ec);
  if (ec) {
    r.transport_error = true;
    return r;
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);
  std::string current;
  auto on_body = [&](std::uint64_t remain, std::string_view data, beast::error_code&) {
    if (current.empty()) r.chunks.emplace_back(Clock::now(), "");
    current.append(data);
    if (remain == data.size()) {
      r.chunks.back().second = current;
      r.body += current;
      current.clear();
    }
    return data.size();
  };
  parser.on_chunk_body(on_body);
  http::read_header(stream, buffer, parser, ec);
  while (!ec && !parser.is_done()) http::read_some(stream, buffer, parser, ec);
  if (ec && !parser.is_done()) r.transport_error = true;
  auto& res = parser.get();
  r.status = static_cast<int>(res.result_int());
  if (!parser.chunked()) r.body = res.body();
  r.retry_after = std::string(res[http::field::retry_after]);
  r.content_type = std::string(res[http::field::content_type]);
  return r;
}

Reply post(std::uint16_t port, const std::string& target, const json& body) {
  return call(port, http::verb::post, target, body.dump());
}

// SSE "data: ..." payloads, in order, from a body.
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const std::size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  return out;
}

// A completions chunk carries a token when choices[0].text is non-empty (docs/metrics.md §1.2).
bool is_token_event(const std::string& data) {
  if (data == "[DONE]") return false;
  const json j = json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.contains("choices") || j["choices"].empty()) return false;
  const json& c = j["choices"][0];
  if (c.contains("text")) return !c["text"].get<std::string>().empty();
  return c.contains("delta") && c["delta"].contains("content") &&
         !c["delta"]["content"].get<std::string>().empty();
}

std::string words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    // append() rather than "w" + ...: GCC 12 at -O3 raises a false -Wrestrict on the latter.
    s.append("w").append(std::to_string(i)).append(" ");
  }
  return s;
}

// Runs a SimServer on two io threads for the duration of a test.
class Sim {
 public:
  explicit Sim(SimOptions o) : server_(io_, std::move(o)) {
    server_.start();
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~Sim() {
    server_.stop();
    work_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
  }
  std::uint16_t port() const { return server_.port(); }
  SimServer& server() { return server_; }

 private:
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{
      asio::make_work_guard(io_)};
  SimServer server_;
  std::vector<std::thread> threads_;
};

SimOptions fast(const std::string& hw = "rtx4090-48g") {
  SimOptions o;
  o.hardware = hw;
  o.model = "llama-3.1-8b";
  o.port = 0;
  o.seed = 7;
  o.time_scale = 100;
  o.max_model_len = 8192;
  return o;
}

double metric(const std::string& text, const std::string& name) {
  const std::regex re("(^|\\n)" + std::regex_replace(name, std::regex(":"), ":") +
                      "\\{[^}]*\\} ([0-9.e+-]+)");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return -1;
  return std::stod(m[2]);
}

TEST(SimServerTest, StreamingCompletionsFormatWithUsageAndDone) {
  Sim sim(fast());
  const Reply r = post(sim.port(), "/v1/completions",
                       {{"model", "llama-3.1-8b"},
                        {"prompt", "a b c d e"},
                        {"max_tokens", 5},
                        {"ignore_eos", true},
                        {"stream", true},
                        {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "text/event-stream");
  const auto events = sse_data(r.body);
  ASSERT_EQ(events.size(), 7u) << r.body;  // 5 tokens + usage + [DONE]
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(is_token_event(events[i])) << events[i];
    const json j = json::parse(events[i]);
    EXPECT_EQ(j["object"], "text_completion");
    EXPECT_EQ(j["choices"][0]["finish_reason"], i == 4 ? json("length") : json());
  }
  const json usage = json::parse(events[5]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
  EXPECT_EQ(usage["usage"]["total_tokens"], 10);
  EXPECT_EQ(events[6], "[DONE]");
  // One token per SSE event, each in its own HTTP chunk.
  EXPECT_GE(r.chunks.size(), 7u);
}

TEST(SimServerTest, ChatStreamingRoleChunkAndTokensPerEvent) {
  SimOptions o = fast();
  o.tokens_per_event = 3;
  Sim sim(o);
  const Reply r = post(sim.port(), "/v1/chat/completions",
                       {{"messages", {{{"role", "user"}, {"content", "hi there"}}}},
                        {"max_tokens", 7},
                        {"stream", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  const auto events = sse_data(r.body);
  ASSERT_EQ(events.size(), 5u) << r.body;  // role + 3 + 3 + 1 tokens + [DONE], no usage asked
  const json role = json::parse(events[0]);
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  EXPECT_FALSE(is_token_event(events[0]));
  std::string text;
  for (int i = 1; i <= 3; ++i) {
    const json j = json::parse(events[i]);
    EXPECT_EQ(j["object"], "chat.completion.chunk");
    text += j["choices"][0]["delta"]["content"].get<std::string>();
  }
  // Output re-tokenizes to completion_tokens under the simulator's tokenizer.
  const Reply t = post(sim.port(), "/tokenize", {{"prompt", text}});
  EXPECT_EQ(json::parse(t.body)["count"], 7);
  EXPECT_EQ(events[4], "[DONE]");
}

TEST(SimServerTest, NonStreamingAndDeterministicText) {
  SimOptions o = fast();
  std::string first_text;
  for (int round = 0; round < 2; ++round) {
    Sim sim(o);
    const Reply r = post(sim.port(), "/v1/completions", {{"prompt", "x y z"}, {"max_tokens", 12}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = json::parse(r.body);
    EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
    EXPECT_EQ(j["usage"]["completion_tokens"], 12);
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    const std::string text = j["choices"][0]["text"];
    if (round == 0)
      first_text = text;
    else
      EXPECT_EQ(text, first_text);  // same seed, same text
  }
  const Reply chat = [&] {
    Sim sim(o);
    return post(sim.port(), "/v1/chat/completions",
                {{"messages", {{{"role", "user"}, {"content", "q"}}}}, {"max_tokens", 2}});
  }();
  ASSERT_EQ(chat.status, 200);
  EXPECT_EQ(json::parse(chat.body)["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(json::parse(chat.body)["usage"]["prompt_tokens"], 3);
}

TEST(SimServerTest, StopStringsNChoicesLogprobsToolsAndVersion) {
  Sim sim(fast());
  // A stop string: text cut before it, finish_reason "stop", and the engine generated only the
  // tokens up to it (the generation counter rises by completion_tokens, not max_tokens × n).
  const json body = json::parse(
      R"({"prompt": "a b c", "max_tokens": 400, "n": 2, "stop": ["."], "seed": 3, "logprobs": 1})");
  const Reply whole = post(sim.port(), "/v1/completions", body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json w = json::parse(whole.body);
  ASSERT_EQ(w["choices"].size(), 2u);
  std::int64_t tokens = 0;
  for (std::size_t i = 0; i < 2; ++i) {
    const json& c = w["choices"][i];
    EXPECT_EQ(c["index"], i);
    EXPECT_EQ(c["finish_reason"], "stop");
    EXPECT_EQ(c["stop_reason"], ".");
    EXPECT_EQ(c["text"].get<std::string>().find('.'), std::string::npos);
    const json& lp = c["logprobs"];
    tokens += static_cast<std::int64_t>(lp["tokens"].size());
    EXPECT_EQ(lp["token_logprobs"].size(), lp["tokens"].size());
    EXPECT_EQ(lp["text_offset"].size(), lp["tokens"].size());
    EXPECT_LE(lp["token_logprobs"][0].get<double>(), 0.0);
    EXPECT_EQ(lp["top_logprobs"][0].size(), 1u);
  }
  EXPECT_NE(w["choices"][0]["text"], w["choices"][1]["text"]);
  EXPECT_EQ(w["usage"]["completion_tokens"], tokens);
  EXPECT_LT(tokens, 800);
  const Reply m = call(sim.port(), http::verb::get, "/metrics");
  EXPECT_EQ(metric(m.body, "vllm:generation_tokens_total"), static_cast<double>(tokens));
  // Streamed, the same request (same seed) gives the same text per choice.
  json streamed_body = body;
  streamed_body["stream"] = true;
  const Reply streamed = post(sim.port(), "/v1/completions", streamed_body);
  ASSERT_EQ(streamed.status, 200);
  std::string texts[2];
  for (const std::string& data : sse_data(streamed.body)) {
    if (data == "[DONE]") break;
    const json event = json::parse(data);
    const json& c = event["choices"][0];
    texts[c["index"].get<std::size_t>()] += c["text"].get<std::string>();
  }
  EXPECT_EQ(texts[0], w["choices"][0]["text"]);
  EXPECT_EQ(texts[1], w["choices"][1]["text"]);
  // Refusals in vLLM's body, naming the field.
  const json chat_tools = json::parse(R"({"messages": [{"role": "user", "content": "q"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
      "tool_choice": "auto"})");
  const Reply auto_tools = post(sim.port(), "/v1/chat/completions", chat_tools);
  EXPECT_EQ(auto_tools.status, 400);
  EXPECT_EQ(json::parse(auto_tools.body)["error"]["param"], "tool_choice") << auto_tools.body;
  const Reply many = post(sim.port(), "/v1/completions", {{"prompt", "a"}, {"logprobs", 21}});
  EXPECT_EQ(json::parse(many.body)["error"]["param"], "logprobs");
  const Reply echo = post(sim.port(), "/v1/completions",
                          {{"prompt", "say this"}, {"max_tokens", 2}, {"echo", true}});
  ASSERT_EQ(echo.status, 200) << echo.body;
  EXPECT_EQ(json::parse(echo.body)["choices"][0]["text"].get<std::string>().rfind("say this ", 0),
            0u);
  const Reply version = call(sim.port(), http::verb::get, "/version");
  ASSERT_EQ(version.status, 200);
  EXPECT_FALSE(json::parse(version.body)["version"].get<std::string>().empty());
}

TEST(SimServerTest, ModelsTokenizeHealthMetricsAndErrors) {
  Sim sim(fast());
  const Reply models = call(sim.port(), http::verb::get, "/v1/models");
  ASSERT_EQ(models.status, 200);
  const json m = json::parse(models.body)["data"][0];
  EXPECT_EQ(m["id"], "llama-3.1-8b");
  EXPECT_EQ(m["max_model_len"], 8192);
  EXPECT_EQ(m["metadata"]["simulated"], true);
  EXPECT_EQ(m["metadata"]["hardware"], "rtx4090-48g");
  EXPECT_EQ(m["metadata"]["model"], "llama-3.1-8b");
  EXPECT_EQ(m["metadata"]["dtype"], "bf16");
  EXPECT_EQ(m["metadata"]["time_scale"], 100.0);

  const Reply tok = post(sim.port(), "/tokenize", {{"prompt", words(37)}});
  ASSERT_EQ(tok.status, 200);
  EXPECT_EQ(json::parse(tok.body)["count"], 37);
  EXPECT_EQ(json::parse(tok.body)["tokens"].size(), 37u);
  const Reply gen = post(sim.port(), "/v1/completions", {{"prompt", words(37)}, {"max_tokens", 1}});
  EXPECT_EQ(json::parse(gen.body)["usage"]["prompt_tokens"], 37);

  EXPECT_EQ(call(sim.port(), http::verb::get, "/health").status, 200);
  const Reply metrics = call(sim.port(), http::verb::get, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  for (const char* name :
       {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:num_preemptions_total", "vllm:time_to_first_token_seconds_bucket",
        "vllm:time_per_output_token_seconds_bucket", "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total"}) {
    EXPECT_NE(metrics.body.find(std::string(name) + "{"), std::string::npos) << name;
  }
  EXPECT_NE(metrics.body.find("model_name=\"llama-3.1-8b\""), std::string::npos);
  EXPECT_EQ(metric(metrics.body, "vllm:prompt_tokens_total"), 37);
  EXPECT_EQ(metric(metrics.body, "vllm:generation_tokens_total"), 1);
  EXPECT_EQ(metric(metrics.body, "vllm:prefix_cache_queries_total"), 37);
  EXPECT_EQ(metric(metrics.body, "vllm:prefix_cache_hits_total"), 0);
  // The same prompt again: its two full 16-token blocks are cached (vLLM's counters, in tokens).
  post(sim.port(), "/v1/completions", {{"prompt", words(37)}, {"max_tokens", 1}});
  const std::string again = call(sim.port(), http::verb::get, "/metrics").body;
  EXPECT_EQ(metric(again, "vllm:prefix_cache_queries_total"), 74);
  EXPECT_EQ(metric(again, "vllm:prefix_cache_hits_total"), 32);
  EXPECT_DOUBLE_EQ(metric(again, "vllm:gpu_prefix_cache_hit_rate"), 32.0 / 74.0);

  EXPECT_EQ(call(sim.port(), http::verb::get, "/nope").status, 404);
  EXPECT_EQ(call(sim.port(), http::verb::get, "/v1/completions").status, 405);
  const Reply bad = post(sim.port(), "/v1/completions", {{"prompt", "a"}, {"max_tokens", 9000}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("maximum context length is 8192"), std::string::npos) << bad.body;
  EXPECT_EQ(post(sim.port(), "/v1/completions", {{"model", "other"}, {"prompt", "a"}}).status, 404);
}

// A client that closes its connection while its request is still running, before anything was
// written to it (non-streaming: nothing is written until the end), frees its slot at once: the
// simulator watches the socket, as vLLM aborts requests whose connection closed.
TEST(SimServerTest, ClientClosingBeforeAnyWriteCancelsItsRequest) {
  SimOptions o = fast();
  o.time_scale = 1;  // 4000 tokens take about a minute: only a cancel ends it within the test
  Sim sim(o);
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), sim.port()));
  const std::string body = json({{"prompt", words(64)}, {"max_tokens", 4000}}).dump();
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  asio::write(socket, asio::buffer(request));
  const auto running = [&] {
    return metric(call(sim.port(), http::verb::get, "/metrics").body, "vllm:num_requests_running");
  };
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (running() != 1 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(running(), 1);
  socket.close();
  while (running() != 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(running(), 0);
  EXPECT_EQ(
      metric(call(sim.port(), http::verb::get, "/metrics").body, "vllm:request_success_total"), 0);
}

TEST(SimServerTest, RefusesToStartWithTheNumbers) {
  asio::io_context io;
  SimOptions o = fast("rtx4090-24g");
  o.model = "llama-3.1-70b";
  SimServer too_big(io, o);
  try {
    too_big.start();
    FAIL() << "70B bf16 on 24 GB started";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("141.20 GB"), std::string::npos) << e.what();
  }
  o.model = "llama-3.1-8b";
  o.max_model_len = 131072;
  SimServer too_long(io, o);
  try {
    too_long.start();
    FAIL() << "131072-token sequence fitted on 24 GB";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("one full-length sequence does not fit"),
              std::string::npos)
        << e.what();
  }
  o.hardware = "no-such-gpu";
  SimServer unknown(io, o);
  try {
    unknown.start();
    FAIL() << "unknown GPU accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("a100-80g-pcie"), std::string::npos) << e.what();
  }
  o = fast();
  o.time_scale = 0;
  SimServer bad_scale(io, o);
  try {
    bad_scale.start();
    FAIL() << "time_scale 0 accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("time_scale"), std::string::npos) << e.what();
  }
}

TEST(SimServerTest, FaultInjection) {
  SimOptions o = fast();
  o.faults.rate_limit_rate = 1.0;
  o.faults.retry_after_s = 4;
  {
    Sim sim(o);
    const Reply r = post(sim.port(), "/v1/completions", {{"prompt", "a"}});
    EXPECT_EQ(r.status, 429);
    EXPECT_EQ(r.retry_after, "4");
  }
  o.faults = {};
  o.faults.error_rate = 1.0;
  {
    Sim sim(o);
    EXPECT_EQ(post(sim.port(), "/v1/completions", {{"prompt", "a"}}).status, 500);
  }
  o.faults = {};
  o.faults.reset_rate = 1.0;
  o.faults.reset_after_tokens = 3;
  {
    Sim sim(o);
    const Reply r = post(sim.port(), "/v1/completions",
                         {{"prompt", "a"}, {"max_tokens", 10}, {"stream", true}});
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(r.transport_error);
    int tokens = 0;
    for (const auto& d : sse_data(r.body)) tokens += is_token_event(d);
    EXPECT_EQ(tokens, 3);
  }
  o.faults = {};
  o.faults.malformed_rate = 1.0;
  o.faults.malformed_after_tokens = 2;
  {
    Sim sim(o);
    const Reply r = post(sim.port(), "/v1/completions",
                         {{"prompt", "a"}, {"max_tokens", 10}, {"stream", true}});
    const auto events = sse_data(r.body);
    ASSERT_EQ(events.size(), 3u) << r.body;
    EXPECT_TRUE(json::parse(events[2], nullptr, false).is_discarded());
  }
  o.faults = {};
  o.faults.stall_rate = 1.0;
  o.faults.stall_after_tokens = 2;
  o.faults.stall_ms = 1500;
  {
    Sim sim(o);
    const Reply r = post(sim.port(), "/v1/completions",
                         {{"prompt", "a"}, {"max_tokens", 10}, {"stream", true}});
    // Two tokens, then silence on an open connection for stall_ms, then a reset.
    EXPECT_GE(Clock::now() - r.sent, std::chrono::milliseconds(1500));
    EXPECT_TRUE(r.transport_error);
    EXPECT_EQ(sse_data(r.body).size(), 2u);
  }
  o.faults = {};
  o.faults.slow_headers_rate = 1.0;
  o.faults.slow_headers_ms = 300;
  {
    Sim sim(o);
    const Reply r = post(sim.port(), "/v1/completions", {{"prompt", "a"}, {"max_tokens", 1}});
    EXPECT_EQ(r.status, 200);
    EXPECT_GE(Clock::now() - r.sent, std::chrono::milliseconds(300));
  }
}

struct Measured {
  double ttft_s = 0;
  double tpot_s = 0;
  int tokens = 0;
};

Measured measure_stream(std::uint16_t port, int prompt_words, int max_tokens) {
  const Reply r = post(port, "/v1/completions",
                       {{"prompt", words(prompt_words)},
                        {"max_tokens", max_tokens},
                        {"ignore_eos", true},
                        {"stream", true}});
  Measured m;
  Clock::time_point first, last;
  for (const auto& [t, data] : r.chunks) {
    for (const auto& d : sse_data(data)) {
      if (!is_token_event(d)) continue;
      if (m.tokens++ == 0) first = t;
      last = t;
    }
  }
  m.ttft_s = std::chrono::duration<double>(first - r.sent).count();
  if (m.tokens >= 2)
    m.tpot_s = std::chrono::duration<double>(last - first).count() / (m.tokens - 1);
  return m;
}

TEST(SimServerTest, SingleRequestReproducesItsOwnPredictionWithin3Percent) {
  SimOptions o = fast();
  // Real step times (≈ 0.8 s of chunked prefill for 6000 tokens, ≈ 22 ms decode) dwarf timer
  // jitter; the median of three sequential requests absorbs a scheduling hiccup on a shared
  // machine.
  o.time_scale = 1;
  o.enable_prefix_caching = false;  // the three requests send the same prompt
  Sim sim(o);
  const auto predicted = sim.server().predict_single(6000, 24);
  std::vector<Measured> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(measure_stream(sim.port(), 6000, 24));
  for (const auto& m : runs) ASSERT_EQ(m.tokens, 24);
  auto median = [&](double Measured::*field) {
    std::vector<double> v;
    for (const auto& m : runs) v.push_back(m.*field);
    std::sort(v.begin(), v.end());
    return v[1];
  };
  const double ttft = median(&Measured::ttft_s);
  const double tpot = median(&Measured::tpot_s);
  EXPECT_NEAR(ttft, predicted.ttft_s, 0.03 * predicted.ttft_s)
      << "measured " << ttft << " predicted " << predicted.ttft_s;
  EXPECT_NEAR(tpot, predicted.tpot_s, 0.03 * predicted.tpot_s)
      << "measured " << tpot << " predicted " << predicted.tpot_s;
  std::printf(
      "single request 6000 in / 24 out on rtx4090-48g (median of 3): TTFT %.2f ms "
      "(predicted %.2f), TPOT %.3f ms (predicted %.3f)\n",
      ttft * 1000, predicted.ttft_s * 1000, tpot * 1000, predicted.tpot_s * 1000);
}

TEST(SimServerTest, A100PcieFasterPerTokenThan4090AtConcurrency1) {
  SimOptions o = fast("a100-80g-pcie");
  o.time_scale = 2;
  Measured a100, rtx;
  {
    Sim sim(o);
    a100 = measure_stream(sim.port(), 128, 24);
  }
  o.hardware = "rtx4090-48g";
  {
    Sim sim(o);
    rtx = measure_stream(sim.port(), 128, 24);
  }
  // Predicted per token: 16.06 GB / (1935 × 0.8) + 0.6 ms (vLLM's step and sequence costs)
  // ≈ 11.0 ms vs 16.06 / (1008 × 0.8) + 0.6 ≈ 20.5 ms (halved by time_scale 2).
  EXPECT_LT(a100.tpot_s * 1.5, rtx.tpot_s) << a100.tpot_s << " vs " << rtx.tpot_s;
  std::printf("concurrency 1 TPOT at time_scale 2: a100-80g-pcie %.3f ms, rtx4090-48g %.3f ms\n",
              a100.tpot_s * 1000, rtx.tpot_s * 1000);
}

struct LoadResult {
  double max_waiting = 0;
  double preemptions = 0;
  double max_kv_usage = 0;
  int ok = 0;
};

constexpr int kLongContextRequests = 24;  // 24 × 2.2k tokens ≈ 53k: more than 24 GB holds

SimOptions long_context_options(const std::string& hw) {
  SimOptions o = fast(hw);
  o.time_scale = 50;
  o.enable_prefix_caching = false;  // every client sends the same prompt
  return o;
}

// The 24 requests on the engine the server builds from the same options (build_sim_model), all
// arriving at once, stepped in virtual time: what the cards' KV pools do with them does not
// depend on how fast the host runs the simulator or the clients.
LoadResult long_context_virtual(const std::string& hw) {
  const SimModel m = build_sim_model(long_context_options(hw));
  BatchEngine engine(m.roofline, m.engine_config);
  for (int i = 0; i < kLongContextRequests; ++i)
    EXPECT_TRUE(engine.add({.id = static_cast<std::uint64_t>(i + 1),
                            .prompt_tokens = 2000 + i,
                            .max_output_tokens = 200,
                            .block_hashes = {}}));
  LoadResult out;
  for (int steps = 0; !engine.idle() && steps < 100000; ++steps) {
    const StepOutcome o = engine.step();
    out.ok += static_cast<int>(o.finished.size());
    out.max_waiting = std::max(out.max_waiting, static_cast<double>(engine.waiting()));
    out.max_kv_usage = std::max(out.max_kv_usage, engine.kv_usage());
  }
  out.preemptions = static_cast<double>(engine.preemptions_total());
  return out;
}

// The same requests through the server's HTTP API in real time, /metrics polled meanwhile.
LoadResult long_context_load(const std::string& hw) {
  Sim sim(long_context_options(hw));
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kLongContextRequests; ++i) {
    clients.emplace_back([&, i] {
      const Reply r =
          post(sim.port(), "/v1/completions",
               {{"prompt", words(2000 + i)}, {"max_tokens", 200}, {"ignore_eos", true}});
      if (r.status == 200) ++ok;
    });
  }
  LoadResult out;
  std::atomic<bool> done{false};
  std::thread joiner([&] {
    for (auto& t : clients) t.join();
    done = true;
  });
  while (!done) {
    const std::string text = call(sim.port(), http::verb::get, "/metrics").body;
    out.max_waiting = std::max(out.max_waiting, metric(text, "vllm:num_requests_waiting"));
    out.max_kv_usage = std::max(out.max_kv_usage, metric(text, "vllm:kv_cache_usage_perc"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  joiner.join();
  out.preemptions =
      metric(call(sim.port(), http::verb::get, "/metrics").body, "vllm:num_preemptions_total");
  out.ok = ok;
  return out;
}

// Which card queues or preempts is decided in virtual time, on the server's own engine model:
// in real time the 48 GB card's queue depends on the host (under ASan beside other tests its
// simulator fell behind and "max waiting 15" at 23 % KV use read as KV pressure). The real-time
// run through HTTP asserts what no host speed changes: every request completes (preempted ones
// too), and the 48 GB card, whose pool holds all 24 requests at once, never preempts and never
// fills half its pool.
TEST(SimServerTest, Rtx4090With24GBHitsKvLimitFirstUnderLongContexts) {
  const LoadResult small = long_context_virtual("rtx4090-24g");
  const LoadResult big = long_context_virtual("rtx4090-48g");
  EXPECT_EQ(small.ok, kLongContextRequests);
  EXPECT_EQ(big.ok, kLongContextRequests);
  // 24 GB (23.65 GiB as CUDA reports it): ≈ 5.8 GiB of KV ≈ 47.8k tokens for 24 × 2.2k-token
  // requests → preemption.
  EXPECT_GT(small.preemptions, 0);
  EXPECT_GT(small.max_kv_usage, 0.95);
  // 48 GB: ≈ 27.4 GiB ≈ 225k tokens, all 24 fit at once.
  EXPECT_EQ(big.preemptions, 0);
  EXPECT_LT(big.max_kv_usage, 0.5);
  EXPECT_GT(small.max_waiting + small.preemptions, big.max_waiting + big.preemptions);
  std::printf(
      "virtual time, 24 x 2.2k-token requests at once: 24g max waiting %.0f, preemptions %.0f, "
      "max KV %.2f; 48g max waiting %.0f, preemptions %.0f, max KV %.2f\n",
      small.max_waiting, small.preemptions, small.max_kv_usage, big.max_waiting, big.preemptions,
      big.max_kv_usage);

  const LoadResult small_rt = long_context_load("rtx4090-24g");
  const LoadResult big_rt = long_context_load("rtx4090-48g");
  EXPECT_EQ(small_rt.ok, kLongContextRequests);
  EXPECT_EQ(big_rt.ok, kLongContextRequests);
  EXPECT_GT(small_rt.max_kv_usage, 0);
  EXPECT_LE(small_rt.max_kv_usage, 1);
  EXPECT_EQ(big_rt.preemptions, 0);
  EXPECT_LT(big_rt.max_kv_usage, 0.5);
  std::printf(
      "real time (time_scale 50): 24g max waiting %.0f, preemptions %.0f, max KV %.2f; "
      "48g max waiting %.0f, preemptions %.0f, max KV %.2f\n",
      small_rt.max_waiting, small_rt.preemptions, small_rt.max_kv_usage, big_rt.max_waiting,
      big_rt.preemptions, big_rt.max_kv_usage);
}

}  // namespace
}  // namespace llmcap::sim
