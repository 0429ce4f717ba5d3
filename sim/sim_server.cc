#include "sim/sim_server.h"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "net/http_server.h"
#include "sim/fault_injector.h"
#include "sim/profile_catalog.h"
#include "sim/roofline.h"
#include "sim/sim_engine_runner.h"
#include "sim/sim_metrics.h"
#include "sim/sim_model.h"
#include "sim/sim_output.h"
#include "sim/sim_request.h"
#include "sim/sim_tokenizer.h"

namespace llmcap::sim {

namespace asio = boost::asio;
using net::HttpRequest;
using net::HttpResponse;
using net::ResponseStream;
using nlohmann::json;

namespace {

constexpr auto use_nothrow = asio::as_tuple(asio::use_awaitable);

// vLLM's error body (current vLLM's ErrorResponse; older versions sent the inner object alone,
// with "object": "error"): {"error": {"message", "type", "param", "code"}}, which OpenAI
// clients read (the openai npm client shows the message and exposes error.param).
HttpResponse error_response(int status, const std::string& message, const std::string& param) {
  const char* type = status == 404   ? "NotFoundError"
                     : status == 429 ? "RateLimitError"
                     : status >= 500 ? "InternalServerError"
                                     : "BadRequestError";
  json body = {{"error",
                {{"message", message},
                 {"type", type},
                 {"param", param.empty() ? json() : json(param)},
                 {"code", status}}}};
  return HttpResponse::json(status, body.dump());
}

}  // namespace

struct SimServerState {
  SimServerState(SimOptions o, SimModel m) : options(std::move(o)), sim(std::move(m)) {}
  SimOptions options;
  SimModel sim;
  std::unique_ptr<SimMetrics> metrics;
  std::shared_ptr<SimEngineRunner> runner;
  std::unique_ptr<FaultInjector> faults;
  std::unique_ptr<SimTokenizer> tokenizer;
  std::unique_ptr<net::HttpServer> http;
  std::atomic<std::uint64_t> next_request{0};
  std::atomic<bool> stopped{false};  // set by SimServer::stop(); read by sleeping handlers
  std::time_t started_at = 0;
  // The name requests must carry: --served-model-name, else the model profile's name.
  const std::string& served_model() const {
    return options.served_model_name.empty() ? sim.model.name : options.served_model_name;
  }
};

namespace {

using StatePtr = std::shared_ptr<SimServerState>;

}  // namespace

// Request handling. Free coroutines holding the state by value, so the state outlives them.
namespace handlers {

using Result = asio::awaitable<std::optional<HttpResponse>>;

HttpResponse models(const SimServerState& s) {
  const double kv_elem = s.options.kv_cache_dtype == "fp8" ? 1.0 : 2.0;
  json meta = {
      {"simulated", true},
      {"hardware", s.sim.hardware.name},
      {"hardware_name", s.sim.hardware.display_name},
      {"form_factor", s.sim.hardware.form_factor},
      {"model", s.sim.model.name},
      {"dtype", std::string(analysis::to_string(s.sim.dtype))},
      {"kv_cache_dtype", kv_elem == 1.0 ? "fp8" : "auto"},
      {"time_scale", s.options.time_scale},
      {"seed", s.options.seed},
      {"gpu_memory_utilization", s.options.gpu_memory_utilization},
      {"memory_gb", s.sim.hardware.nominal_memory_gb > 0
                        ? s.sim.hardware.nominal_memory_gb
                        : analysis::to_gb(s.sim.hardware.memory_bytes)},
      {"memory_gib", analysis::to_gib(s.sim.hardware.memory_bytes)},
      {"weights_gb", analysis::to_gb(s.sim.fit.weight_bytes)},
      {"kv_pool_gib", analysis::to_gib(s.sim.fit.kv_pool_bytes)},
      {"kv_pool_tokens", s.sim.fit.kv_pool_tokens},
      {"gpu_blocks", s.sim.fit.gpu_blocks},
      {"kv_bytes_per_token", s.sim.fit.kv_bytes_per_token},
      {"max_num_seqs", s.sim.engine_config.max_num_seqs},
      {"max_num_batched_tokens", s.sim.engine_config.max_num_batched_tokens},
      {"enable_prefix_caching", s.sim.engine_config.enable_prefix_caching},
      {"bandwidth_efficiency", s.sim.hardware.bandwidth_efficiency},
      {"compute_efficiency", analysis::compute_efficiency_for(s.sim.hardware, s.sim.dtype)},
      {"engine", s.sim.roofline.engine().name},
      {"step_overhead_ms", s.sim.roofline.step_overhead_s() * 1000.0},
      {"per_sequence_ms", s.sim.roofline.engine().per_seq_s * 1000.0},
      {"per_request_ms", s.sim.roofline.engine().per_request_s * 1000.0},
      {"tokenizer", "whitespace words, 1 token each"},
  };
  json entry = {{"id", s.served_model()},     {"object", "model"},
                {"created", s.started_at},    {"owned_by", "llmcap-sim"},
                {"root", s.sim.model.name},   {"max_model_len", s.sim.max_model_len},
                {"metadata", std::move(meta)}};
  json body = {{"object", "list"}, {"data", json::array({std::move(entry)})}};
  return HttpResponse::json(200, body.dump());
}

HttpResponse tokenize(const SimServerState& s, const HttpRequest& req) {
  const TokenizeInput in = parse_tokenize_request(req.body);
  if (!in.text) return error_response(in.error.status, in.error.message, in.error.param);
  const auto ids = s.tokenizer->tokenize(*in.text);
  json body = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", s.sim.max_model_len}};
  return HttpResponse::json(200, body.dump());
}

std::string sse(const json& event) { return "data: " + event.dump() + "\n\n"; }

json token_bytes(const std::string& token) {
  json bytes = json::array();
  for (unsigned char c : token) bytes.push_back(static_cast<int>(c));
  return bytes;
}

// The logprobs object of tokens [from, to) of a choice, in vLLM's shapes: completions
// {tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset} (the sampled token
// always in the dict, so logprobs = 0 gives one entry); chat {content: [{token, logprob, bytes,
// top_logprobs: [{token, logprob, bytes}]}]} (top_logprobs entries, possibly none).
json logprobs_json(const GenerationRequest& g, const ChoicePlan& plan, std::size_t choice,
                   std::size_t from, std::size_t to) {
  if (!g.logprobs) return nullptr;
  const std::int64_t k = *g.logprobs;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < from; ++i) offset += plan.tokens[i].size();
  json tokens = json::array(), token_logprobs = json::array(), tops = json::array(),
       offsets = json::array(), content = json::array();
  for (std::size_t i = from; i < to; ++i) {
    const std::uint64_t salt = (static_cast<std::uint64_t>(choice) << 32) | i;
    const TokenLogprob lp =
        synthetic_logprob(plan.tokens[i], salt, g.chat ? k : std::max<std::int64_t>(k, 1));
    if (g.chat) {
      json top = json::array();
      for (const auto& t : lp.top)
        top.push_back(
            {{"token", t.token}, {"logprob", t.logprob}, {"bytes", token_bytes(t.token)}});
      content.push_back({{"token", lp.token},
                         {"logprob", lp.logprob},
                         {"bytes", token_bytes(lp.token)},
                         {"top_logprobs", std::move(top)}});
    } else {
      json top = json::object();
      for (const auto& t : lp.top) top[t.token] = t.logprob;
      tokens.push_back(lp.token);
      token_logprobs.push_back(lp.logprob);
      tops.push_back(std::move(top));
      offsets.push_back(offset);
    }
    offset += plan.tokens[i].size();
  }
  if (g.chat) return {{"content", std::move(content)}};
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

json stop_reason(const ChoicePlan& plan) {
  if (plan.stop_string) return *plan.stop_string;
  if (plan.stop_token_id) return *plan.stop_token_id;
  return nullptr;
}

// One choice of a chunk or response. `finished`: it carries finish_reason and stop_reason.
// message: chat's whole-response form ("message") rather than a stream's "delta".
json choice_json(const GenerationRequest& g, std::size_t index, const std::string& text,
                 json logprobs, const ChoicePlan* finished, bool message = false) {
  json choice = {{"index", index},
                 {"logprobs", std::move(logprobs)},
                 {"finish_reason", finished ? json(finished->finish_reason()) : json()},
                 {"stop_reason", finished ? stop_reason(*finished) : json()}};
  if (!g.chat) {
    choice["text"] = text;
  } else if (message) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["delta"] = {{"content", text}};
  }
  return choice;
}

json role_chunk_choice(std::size_t index) {
  return {{"index", index},
          {"delta", {{"role", "assistant"}, {"content", ""}}},
          {"logprobs", nullptr},
          {"finish_reason", nullptr}};
}

json envelope(const GenerationRequest& g, const std::string& id, std::time_t created,
              const std::string& model, json choices, bool stream) {
  return {{"id", id},
          {"object", !g.chat  ? "text_completion"
                     : stream ? "chat.completion.chunk"
                              : "chat.completion"},
          {"created", created},
          {"model", model},
          {"choices", std::move(choices)}};
}

json usage(const GenerationRequest& g, std::int64_t completion_tokens) {
  return {{"prompt_tokens", g.prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", g.prompt_tokens + completion_tokens}};
}

// One choice in flight: its plan and what the client has been sent of it.
struct ChoiceState {
  ChoicePlan plan;
  std::int64_t generated = 0;    // tokens the engine produced
  std::int64_t sent_tokens = 0;  // tokens covered by events written
  std::size_t sent_chars = 0;    // characters of plan.text written
  bool done() const { return sent_tokens == static_cast<std::int64_t>(plan.tokens.size()); }
};

// The event of choice c's tokens [sent_tokens, generated): its text delta and logprobs; marks
// them sent.
std::string next_event(const GenerationRequest& g, const std::string& id, std::time_t created,
                       const std::string& model, std::size_t c, ChoiceState& st) {
  const std::size_t visible = st.plan.visible_chars[static_cast<std::size_t>(st.generated) - 1];
  const bool last = st.generated == static_cast<std::int64_t>(st.plan.tokens.size());
  // echo: the prompt goes before the first text of each choice, as vLLM streams it.
  const std::string echo = st.sent_tokens == 0 && g.echo ? *g.echo : std::string();
  json choice =
      choice_json(g, c, echo + st.plan.text.substr(st.sent_chars, visible - st.sent_chars),
                  logprobs_json(g, st.plan, c, static_cast<std::size_t>(st.sent_tokens),
                                static_cast<std::size_t>(st.generated)),
                  last ? &st.plan : nullptr);
  st.sent_tokens = st.generated;
  st.sent_chars = visible;
  return sse(envelope(g, id, created, model, json::array({std::move(choice)}), true));
}

// Deterministic id: seed and arrival index in hex (a helper: GCC 12 mishandles local arrays
// inside coroutine frames).
std::string request_id(bool chat, std::uint64_t seed, std::uint64_t index) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%016llx%08llx", chat ? "chatcmpl" : "cmpl",
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(index));
  return buf;
}

// Sleeps `ms` (slow headers, stalls) in short slices so stop() ends the wait promptly; the
// connection's executor runs the timer, `stopped` is the only cross-thread state.
asio::awaitable<void> sleep_ms(const SimServerState& s, std::int64_t ms) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!s.stopped && std::chrono::steady_clock::now() < until) {
    timer.expires_at(
        std::min(until, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
    co_await timer.async_wait(use_nothrow);
  }
}

// Engine ids: (arrival index + 1) × kChoiceIds + choice, so the n sequences of a request are
// distinct engine requests.
constexpr std::uint64_t kChoiceIds = 256;

// The plans of a request's n choices. Each choice draws its own words: from the request's seed
// when it sent one (same seed, same text), else from the server's seed and the arrival index.
std::vector<ChoiceState> plan_choices(const SimServerState& s, const GenerationRequest& g,
                                      std::uint64_t index) {
  std::vector<ChoiceState> out(static_cast<std::size_t>(g.n));
  for (std::size_t c = 0; c < out.size(); ++c) {
    WordGenerator words =
        g.seed ? WordGenerator(*g.seed, 0, c) : WordGenerator(s.options.seed, index, c);
    out[c].plan = plan_choice(g, words, *s.tokenizer);
  }
  return out;
}

// The engine's view of the choices: each an independent sequence of the same prompt (vLLM V1
// fans n out into child requests; with prefix caching a later child finds the prompt blocks the
// first computed), as long as its plan (a stop ends it early).
std::vector<EngineRequest> engine_requests(const GenerationRequest& g,
                                           const std::vector<ChoiceState>& choices,
                                           std::uint64_t index, std::int64_t block_tokens) {
  std::vector<EngineRequest> out;
  for (std::size_t c = 0; c < choices.size(); ++c) {
    const ChoicePlan& plan = choices[c].plan;
    EngineRequest r{(index + 1) * kChoiceIds + c, g.prompt_tokens,
                    static_cast<std::int64_t>(plan.tokens.size()), g.block_hashes};
    if (block_tokens > 0) {
      // The blocks of the answer are cached too (vLLM keeps full blocks of prompt + output): the
      // chain of block hashes continues over the tokens it will generate (the words the stream
      // sends), so a next turn that sends this answer back hits them.
      std::vector<std::int64_t> ids = g.partial_block_ids;
      ids.insert(ids.end(), plan.token_ids.begin(), plan.token_ids.end());
      append_block_hashes(r.block_hashes, ids, block_tokens);
    }
    out.push_back(std::move(r));
  }
  return out;
}

HttpResponse whole_response(const GenerationRequest& g, const std::string& id, std::time_t created,
                            const std::string& model, const std::vector<ChoiceState>& choices) {
  json out = json::array();
  std::int64_t completion_tokens = 0;
  for (std::size_t c = 0; c < choices.size(); ++c) {
    const ChoicePlan& plan = choices[c].plan;
    completion_tokens += static_cast<std::int64_t>(plan.tokens.size());
    out.push_back(choice_json(g, c, g.echo.value_or("") + plan.text,
                              logprobs_json(g, plan, c, 0, plan.tokens.size()), &plan, true));
  }
  json body = envelope(g, id, created, model, std::move(out), false);
  body["usage"] = usage(g, completion_tokens);
  return HttpResponse::json(200, body.dump());
}

Result generate(StatePtr s, HttpRequest& req, ResponseStream& stream, bool chat) {
  GenerationLimits limits{
      s->sim.max_model_len, s->options.default_max_tokens, s->served_model(),
      s->sim.engine_config.enable_prefix_caching ? s->sim.engine_config.block_tokens : 0};
  ParseResult parsed = parse_generation_request(req.body, chat, *s->tokenizer, limits);
  if (!parsed.request)
    co_return error_response(parsed.error.status, parsed.error.message, parsed.error.param);
  GenerationRequest g = std::move(*parsed.request);

  const std::uint64_t index = s->next_request.fetch_add(1);
  const FaultDecision fault = s->faults->decide(index);
  if (fault.slow_headers_ms > 0) co_await sleep_ms(*s, fault.slow_headers_ms);
  if (fault.kind == FaultKind::kServerError)
    co_return error_response(500, "simulated internal error (fault injection)", "");
  if (fault.kind == FaultKind::kRateLimited) {
    co_return error_response(429, "simulated rate limit (fault injection)", "")
        .with_header("Retry-After", std::to_string(s->options.faults.retry_after_s));
  }

  s->metrics->add_prompt_tokens(g.prompt_tokens);
  std::vector<ChoiceState> choices = plan_choices(*s, g, index);
  std::vector<EngineRequest> sequences = engine_requests(g, choices, index, limits.block_tokens);
  std::vector<std::uint64_t> engine_ids;
  for (const auto& r : sequences) engine_ids.push_back(r.id);
  auto channel = s->runner->submit(std::move(sequences), co_await asio::this_coro::executor);
  const auto cancel_all = [runner = s->runner, engine_ids] {
    for (std::uint64_t id : engine_ids) runner->cancel(id);
  };
  // A client that leaves while its request is queued or prefilling (nothing written yet) frees
  // its slots at once, as vLLM aborts a request whose connection closed.
  stream.watch_peer_close([cancel_all, channel] {
    cancel_all();
    channel->close();
  });
  const std::string id = request_id(chat, s->options.seed, index);
  const std::time_t created = std::time(nullptr);
  const std::string& model = s->served_model();
  std::size_t open_choices = choices.size();

  if (!g.stream) {
    while (open_choices > 0) {
      auto [ec, c, n] = co_await channel->async_receive(use_nothrow);
      if (ec) co_return error_response(503, "simulator stopped", "");
      choices[c].generated = n;
      if (n == static_cast<std::int64_t>(choices[c].plan.tokens.size())) --open_choices;
    }
    co_return whole_response(g, id, created, model, choices);
  }

  net::HeaderList sse_headers;
  sse_headers.emplace_back("Content-Type", "text/event-stream");
  sse_headers.emplace_back("Cache-Control", "no-cache");
  if (!co_await stream.start(200, std::move(sse_headers))) {
    cancel_all();
    co_return std::nullopt;
  }
  for (std::size_t c = 0; chat && c < choices.size(); ++c) {
    const json role = envelope(g, id, created, model, json::array({role_chunk_choice(c)}), true);
    if (!co_await stream.write(sse(role))) {
      cancel_all();
      co_return std::nullopt;
    }
  }
  const bool faulty_stream = fault.kind == FaultKind::kStall || fault.kind == FaultKind::kReset ||
                             fault.kind == FaultKind::kMalformed;
  std::int64_t taken = 0;  // tokens of all choices generated and sent or pending
  std::int64_t completion_tokens = 0;
  while (open_choices > 0) {
    auto [ec, c, n] = co_await channel->async_receive(use_nothrow);
    if (ec) {  // runner stopped
      stream.reset();
      co_return std::nullopt;
    }
    ChoiceState& st = choices[c];
    while (st.generated < n) {
      if (faulty_stream && taken == fault.after_tokens) {
        cancel_all();
        if (st.generated > st.sent_tokens)
          co_await stream.write(next_event(g, id, created, model, c, st));
        if (fault.kind == FaultKind::kStall) {
          co_await sleep_ms(*s, s->options.faults.stall_ms);
        } else if (fault.kind == FaultKind::kMalformed) {
          // A truncated JSON event, then the stream ends without [DONE].
          co_await stream.write("data: {\"id\":\"" + id + "\",\"choices\":[{\"text\":\n\n");
          co_await stream.finish();
          co_return std::nullopt;
        }
        stream.reset();
        co_return std::nullopt;
      }
      ++st.generated;
      ++taken;
      const bool last = st.generated == static_cast<std::int64_t>(st.plan.tokens.size());
      if (st.generated - st.sent_tokens >= s->options.tokens_per_event || last) {
        if (!co_await stream.write(next_event(g, id, created, model, c, st))) {
          cancel_all();
          co_return std::nullopt;
        }
      }
      if (last) {
        --open_choices;
        completion_tokens += st.generated;
      }
    }
  }
  if (g.include_usage) {
    json u = envelope(g, id, created, model, json::array(), true);
    u["usage"] = usage(g, completion_tokens);
    if (!co_await stream.write(sse(u))) co_return std::nullopt;
  }
  co_await stream.write("data: [DONE]\n\n");
  co_await stream.finish();
  co_return std::nullopt;
}

struct Route {
  const char* method;
  const char* path;
  Result (*handle)(StatePtr, HttpRequest&, ResponseStream&);
};

Result health(StatePtr, HttpRequest&, ResponseStream&) { co_return HttpResponse::text(200, ""); }
// vLLM's GET /version: the version of the server (here llmcap's, which the simulator ships in).
Result version(StatePtr, HttpRequest&, ResponseStream&) {
  co_return HttpResponse::json(200, json{{"version", LLMCAP_SIM_VERSION}}.dump());
}
Result get_models(StatePtr s, HttpRequest&, ResponseStream&) { co_return models(*s); }
Result post_tokenize(StatePtr s, HttpRequest& r, ResponseStream&) { co_return tokenize(*s, r); }
Result metrics(StatePtr s, HttpRequest&, ResponseStream&) {
  co_return HttpResponse::text(200, s->metrics->serialize(), "text/plain; version=0.0.4");
}
Result completions(StatePtr s, HttpRequest& r, ResponseStream& st) {
  return generate(std::move(s), r, st, false);
}
Result chat_completions(StatePtr s, HttpRequest& r, ResponseStream& st) {
  return generate(std::move(s), r, st, true);
}

constexpr Route kRoutes[] = {
    {"GET", "/health", health},
    {"GET", "/version", version},
    {"GET", "/v1/models", get_models},
    {"POST", "/tokenize", post_tokenize},
    {"GET", "/metrics", metrics},
    {"POST", "/v1/completions", completions},
    {"POST", "/v1/chat/completions", chat_completions},
};

Result dispatch(StatePtr s, HttpRequest& req, ResponseStream& stream) {
  bool path_known = false;
  for (const Route& r : kRoutes) {
    if (req.path != r.path) continue;
    path_known = true;
    if (req.method == r.method || (req.method == "HEAD" && std::string_view(r.method) == "GET"))
      return r.handle(std::move(s), req, stream);
  }
  const int status = path_known ? 405 : 404;
  const std::string message = path_known ? "method not allowed" : "no route for " + req.path;
  return [](int st, std::string msg) -> Result { co_return error_response(st, msg, ""); }(status,
                                                                                          message);
}

}  // namespace handlers

SimServer::SimServer(asio::io_context& io, SimOptions options)
    : io_(io), options_(std::move(options)) {}

SimServer::~SimServer() { stop(); }

void SimServer::start() {
  if (state_) throw std::logic_error("SimServer::start called twice");
  // build_sim_model throws with the numbers when the model or one sequence does not fit.
  auto state = std::make_shared<SimServerState>(options_, build_sim_model(options_));
  const SimModel& m = state->sim;
  state->metrics = std::make_unique<SimMetrics>(state->served_model());
  state->faults = std::make_unique<FaultInjector>(options_.faults, options_.seed);
  state->tokenizer = std::make_unique<SimTokenizer>(m.model.vocab);
  state->runner = SimEngineRunner::create(io_, BatchEngine(m.roofline, m.engine_config),
                                          options_.time_scale, *state->metrics);
  state->started_at = std::time(nullptr);

  net::HttpServerOptions http_options;
  http_options.address = options_.address;
  http_options.port = options_.port;
  http_options.server_header = "llmcap-sim";
  std::weak_ptr<SimServerState> weak = state;
  state->http = std::make_unique<net::HttpServer>(
      io_, http_options, [weak](HttpRequest& req, ResponseStream& stream) {
        auto s = weak.lock();
        if (!s) throw std::runtime_error("simulator stopped");
        return handlers::dispatch(std::move(s), req, stream);
      });
  state->runner->start();
  state->http->start();
  state_ = std::move(state);
  spdlog::info("sim: {}", describe());
}

std::uint16_t SimServer::port() const { return state_ ? state_->http->port() : 0; }

void SimServer::stop() {
  if (!state_) return;
  state_->stopped = true;
  state_->http->stop();
  state_->runner->stop();
}

const analysis::MemoryFit& SimServer::memory_fit() const {
  if (!state_) throw std::logic_error("SimServer not started");
  return state_->sim.fit;
}

std::int64_t SimServer::clock_lost_ns() const {
  return state_ && state_->runner ? state_->runner->lost_ns() : 0;
}

std::int64_t SimServer::max_model_len() const { return state_ ? state_->sim.max_model_len : 0; }

SingleRequestPrediction SimServer::predict_single(std::int64_t prompt_tokens,
                                                  std::int64_t output_tokens) const {
  if (!state_) throw std::logic_error("SimServer not started");
  SingleRequestPrediction p = BatchEngine::predict_single(
      state_->sim.roofline, state_->sim.engine_config, prompt_tokens, output_tokens);
  const double k = options_.time_scale;
  return SingleRequestPrediction{p.ttft_s / k, p.tpot_s / k, p.e2e_s / k};
}

std::string SimServer::describe() const {
  if (!state_) return "not started";
  char tail[64];
  std::snprintf(tail, sizeof tail, ", time_scale %g, port %u", state_->options.time_scale,
                static_cast<unsigned>(state_->http ? state_->http->port() : 0));
  return sim::describe(state_->sim) + tail;
}

}  // namespace llmcap::sim
