// FirehoseServer: a minimal OpenAI-compatible streaming server for load-generator benchmarks
// (issue 10). It answers POST /v1/completions and /v1/chat/completions with `max_tokens`
// pre-built SSE token events (vLLM-shaped, ≈ 200 bytes each), then a usage chunk and
// `data: [DONE]`. It does no work per token beyond copying bytes, so the client under test is
// the bottleneck, never the server.
//
// Modes: interval_ms == 0 (firehose) writes events as fast as the socket takes them,
// events_per_write events per chunk; interval_ms > 0 (paced) writes one event per stream every
// interval_ms on absolute deadlines (t_headers + k × interval), so the true inter-token gap is
// exactly interval_ms and any deviation the client measures is client (or kernel) error.
// GET /v1/models lists the one model; other paths get 404.
//
// Ownership: runs on the io_context it is given (which must outlive it); call stop() before
// destroying the io_context. Threading: start()/stop()/port() from one thread; counters are
// atomics readable from any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace llmcap::bench {

struct FirehoseOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;                // 0 picks a free port
  std::int64_t interval_ms = 0;          // 0 = firehose; > 0 = one event per stream per interval
  std::int32_t events_per_write = 64;    // firehose: events batched into one chunk write
  std::int32_t default_max_tokens = 16;  // when a request sends no max_tokens
  std::size_t max_connections = 20'000;  // held at once (raise RLIMIT_NOFILE to match)
  std::string model = "firehose";        // served model name
  // serve_paced_raw only: each request's first token comes interval_ms + U[0, interval_ms)
  // after its headers instead of exactly interval_ms, so streams that started together do not
  // emit in the same instant (as requests arriving at random times would not). The gaps after
  // the first token are still exactly interval_ms.
  bool spread_phases = false;
  // serve_paced_raw only: > 0 sends each answer's finish and usage events as usual, then its
  // [DONE] event and the end of the chunked body tail_delay_ms later, in one write. At 50 (the
  // client's grace after a whole answer, StreamRecorder::kAfterCompleteGraceNs) the tail lands
  // when that grace runs out: issue 36's directed reproduction of the keep-alive race.
  std::int64_t tail_delay_ms = 0;
};

// The bytes both benchmark servers send (vLLM's shapes; sim/ and tests/data use the same), so
// the client under test pays for a real chunk's size and JSON structure: one token event
// (`data: {...}\n\n`), and the finish, usage and `[DONE]` events after n tokens.
std::string vllm_token_event(bool chat, const std::string& model);
std::string vllm_final_events(bool chat, std::int64_t prompt_tokens, std::int64_t n);
// `"max_tokens": N` of a request body by a plain scan (the agent writes the key once);
// nullopt when absent or not a non-negative integer.
std::optional<std::int64_t> max_tokens_in(std::string_view body);

struct FirehoseState;  // defined in firehose_server.cc

class FirehoseServer {
 public:
  FirehoseServer(boost::asio::io_context& io, FirehoseOptions options);
  ~FirehoseServer();
  FirehoseServer(const FirehoseServer&) = delete;
  FirehoseServer& operator=(const FirehoseServer&) = delete;

  // Throws std::invalid_argument naming the field for bad options, std::runtime_error when
  // it cannot listen.
  void start();
  std::uint16_t port() const;
  void stop();  // idempotent

  std::uint64_t requests() const;     // streaming requests started
  std::uint64_t events_sent() const;  // token events written
  // Paced mode: how late the server's own timer woke for an event (worst seen), so a client
  // error can be told from server lag.
  std::int64_t max_pacing_lag_ns() const;
  // Paced mode: quantile q of |gap between a stream's consecutive writes − interval_ms| (ns),
  // i.e. how far the truth the client is judged against was itself off. Call on the server's
  // io thread (or after it stopped); 0 when nothing was paced.
  double pacing_gap_error_ns(double q) const;

 private:
  std::shared_ptr<FirehoseState> state_;
};

}  // namespace llmcap::bench
