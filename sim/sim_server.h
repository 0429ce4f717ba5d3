// SimServer: the simulated OpenAI-compatible inference server (issue 4). It behaves like a
// vLLM-style engine serving `model` at `dtype` on `hardware`: the memory budget decides the KV
// pool (refusing to start when the model or one max-length sequence does not fit), a
// continuous-batching scheduler (BatchEngine) runs iteration by iteration with step times from
// a roofline (Roofline), and tokens are emitted on real timers so clients see the latency.
// Endpoints: POST /v1/completions, POST /v1/chat/completions (SSE or JSON; stop strings, n
// choices, logprobs as vLLM serves them), GET /v1/models, POST /tokenize, GET /health,
// GET /version, GET /metrics (vLLM metric names). See sim/README.md.
//
// Ownership: runs on the io_context it is given (which must outlive it); call stop() before
// destroying it or the io_context. Threading: start()/stop()/port() from any one thread; the
// server runs on whatever threads run the io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "analysis/memory_fit.h"
#include "sim/batch_engine.h"
#include "sim/sim_options.h"

namespace llmcap::sim {

struct SimServerState;  // defined in sim_server.cc

class SimServer {
 public:
  SimServer(boost::asio::io_context& io, SimOptions options);
  ~SimServer();
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  // Resolves the profiles, sizes memory and starts listening. Throws std::runtime_error with
  // the numbers when the model does not fit (weights, reserve, KV pool in GB and GiB), when one
  // max_model_len sequence does not fit, for unknown hardware/model/dtype names (listing the
  // known ones) and for invalid options (naming the field).
  void start();
  // The bound port (after start()).
  std::uint16_t port() const;
  // Stops listening, closes connections and the engine. Idempotent.
  void stop();

  // After start(): the memory budget it runs with, the effective max_model_len, and the
  // model's own latency prediction for one request alone, in wall-clock seconds (divided by
  // time_scale).
  const analysis::MemoryFit& memory_fit() const;
  std::int64_t max_model_len() const;
  // Wall-clock time its engine loop gave up for running behind (SimEngineRunner::lost_ns):
  // nonzero means the host was too busy to keep the simulated GPU in real time. Any thread.
  std::int64_t clock_lost_ns() const;
  SingleRequestPrediction predict_single(std::int64_t prompt_tokens,
                                         std::int64_t output_tokens) const;
  // One-line summary for the log: hardware, model, dtype, KV pool, max_model_len.
  std::string describe() const;

 private:
  boost::asio::io_context& io_;
  SimOptions options_;
  std::shared_ptr<SimServerState> state_;
};

}  // namespace llmcap::sim
