// SimEngineRunner: drives a BatchEngine on real timers so clients see the simulated latency.
// Each iteration: BatchEngine::step() plans and accounts the step, the runner waits the step's
// duration (divided by time_scale) on an absolute-deadline timer (back-to-back steps do not
// drift, and a late wake-up is caught up by the next steps within kMaxCatchUp), then delivers the
// step's tokens: each submission (one request, or the n sequences of a request with n > 1, which
// the engine runs as independent requests as vLLM V1 fans parallel sampling out) has a
// thread-safe channel that receives, per sequence, the cumulative count of tokens generated so
// far. Requests that arrive during a step join the next one, as in a real
// engine; a request that finds the engine idle starts a step at the moment it was submitted.
// The timer is set early by the host's measured wake-up latency, so deliveries centre on the
// engine's clock instead of trailing it. Updates SimMetrics after every step.
//
// Ownership: created with create() and held by a shared_ptr (its loop coroutine keeps it alive
// until stop()). Threading: all engine state lives on the runner's strand; submit()/cancel()/
// stop() may be called from any thread (they post). Token channels are concurrent channels
// bound to the caller's executor, so the consuming coroutine may run anywhere.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "sim/batch_engine.h"
#include "sim/sim_metrics.h"

namespace llmcap::sim {

class SimEngineRunner : public std::enable_shared_from_this<SimEngineRunner> {
 public:
  // Receives (sequence, cumulative tokens generated for it) after each step that produced one:
  // sequence is the index in the submission; closed (error) when the runner stops or a sequence
  // is rejected.
  using TokenChannel = boost::asio::experimental::concurrent_channel<void(
      boost::system::error_code, std::size_t, std::int64_t)>;

  static std::shared_ptr<SimEngineRunner> create(boost::asio::io_context& io, BatchEngine engine,
                                                 double time_scale, SimMetrics& metrics);

  // Starts the iteration loop. Call once.
  void start();
  // Queues a request; tokens arrive on the returned channel (bound to `consumer`).
  // block_hashes: the prompt's prefix_block_hashes() for prefix caching (empty = none).
  std::shared_ptr<TokenChannel> submit(std::uint64_t id, std::int64_t prompt_tokens,
                                       std::int64_t max_output_tokens,
                                       const boost::asio::any_io_executor& consumer,
                                       std::vector<std::uint64_t> block_hashes = {});
  // Queues several sequences (distinct ids) that report on one channel, each update naming its
  // index in `sequences`. If the engine rejects one, the others are dropped and the channel closed.
  std::shared_ptr<TokenChannel> submit(std::vector<EngineRequest> sequences,
                                       const boost::asio::any_io_executor& consumer);
  // Drops a request (client disconnected or fault). Safe for unknown/finished ids.
  void cancel(std::uint64_t id);
  // Stops the loop and closes every open channel. Idempotent.
  void stop();
  // Wall-clock time the loop gave up because it ran more than kMaxCatchUp behind its engine's
  // clock (a host too busy to keep the simulated GPU in real time), in ns since start. Any
  // thread.
  std::int64_t lost_ns() const { return lost_ns_.load(std::memory_order_relaxed); }
  static constexpr std::chrono::milliseconds kMaxCatchUp{25};
  // Bound of how much earlier than a step's end the loop sets its timer to make up for the
  // host's timer wake-up latency (loop()).
  static constexpr std::chrono::microseconds kMaxWakeLead{500};

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    std::shared_ptr<TokenChannel> channel;
    std::size_t sequence = 0;  // index in its submission
    std::int64_t max_output_tokens = 0;
    std::int64_t delivered = 0;
    Clock::time_point arrival;
    Clock::time_point first_token;
  };

  SimEngineRunner(boost::asio::io_context& io, BatchEngine engine, double time_scale,
                  SimMetrics& metrics);
  boost::asio::awaitable<void> loop();
  void deliver(const StepOutcome& outcome, Clock::time_point now);
  void publish_state();

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  BatchEngine engine_;  // strand only
  double time_scale_;
  SimMetrics& metrics_;
  boost::asio::steady_timer step_timer_;                // strand only
  boost::asio::steady_timer wake_timer_;                // strand only; cancelled when work arrives
  std::unordered_map<std::uint64_t, Pending> pending_;  // strand only
  std::int64_t reported_preemptions_ = 0;               // strand only
  std::int64_t reported_prefix_queries_ = 0;            // strand only
  std::int64_t reported_prefix_hits_ = 0;               // strand only
  bool stopped_ = false;                                // strand only
  // When the first request since the engine went idle was submitted (loop() starts the step
  // there); reset whenever the loop goes idle. Strand only.
  std::optional<Clock::time_point> idle_arrival_;
  // Running average of the step timer's wake-up lateness; the timer is set this much early.
  Clock::duration wake_lead_{0};          // strand only
  std::atomic<std::int64_t> lost_ns_{0};  // written on the strand, read anywhere
};

}  // namespace llmcap::sim
