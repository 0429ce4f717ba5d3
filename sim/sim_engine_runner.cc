#include "sim/sim_engine_runner.h"

#include <algorithm>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace llmcap::sim {

namespace asio = boost::asio;

std::shared_ptr<SimEngineRunner> SimEngineRunner::create(asio::io_context& io, BatchEngine engine,
                                                         double time_scale, SimMetrics& metrics) {
  return std::shared_ptr<SimEngineRunner>(
      new SimEngineRunner(io, std::move(engine), time_scale, metrics));
}

SimEngineRunner::SimEngineRunner(asio::io_context& io, BatchEngine engine, double time_scale,
                                 SimMetrics& metrics)
    : strand_(asio::make_strand(io)),
      engine_(std::move(engine)),
      time_scale_(time_scale > 0 ? time_scale : 1.0),
      metrics_(metrics),
      step_timer_(strand_),
      wake_timer_(strand_) {}

void SimEngineRunner::start() {
  asio::co_spawn(
      strand_, [self = shared_from_this()] { return self->loop(); }, asio::detached);
}

std::shared_ptr<SimEngineRunner::TokenChannel> SimEngineRunner::submit(
    std::uint64_t id, std::int64_t prompt_tokens, std::int64_t max_output_tokens,
    const asio::any_io_executor& consumer, std::vector<std::uint64_t> block_hashes) {
  std::vector<EngineRequest> one;
  one.push_back(EngineRequest{id, prompt_tokens, max_output_tokens, std::move(block_hashes)});
  return submit(std::move(one), consumer);
}

std::shared_ptr<SimEngineRunner::TokenChannel> SimEngineRunner::submit(
    std::vector<EngineRequest> sequences, const asio::any_io_executor& consumer) {
  // Capacity for every token update plus slack, so try_send never blocks the runner.
  std::size_t capacity = 2;
  for (const auto& s : sequences) capacity += static_cast<std::size_t>(s.max_output_tokens);
  auto channel = std::make_shared<TokenChannel>(consumer, capacity);
  // The moment the server handed the request over, before the hop onto the runner's strand:
  // an idle GPU would start on it now (loop()), and the server-side TTFT counts from here.
  const Clock::time_point submitted = Clock::now();
  asio::post(strand_, [self = shared_from_this(), channel, submitted,
                       sequences = std::move(sequences)]() mutable {
    std::size_t added = 0;
    for (; !self->stopped_ && added < sequences.size(); ++added) {
      if (!self->engine_.add(sequences[added])) break;
      Pending p;
      p.channel = channel;
      p.sequence = added;
      p.max_output_tokens = sequences[added].max_output_tokens;
      p.arrival = submitted;
      self->pending_.emplace(sequences[added].id, std::move(p));
    }
    if (added < sequences.size()) {
      for (std::size_t i = 0; i < added; ++i) {
        self->engine_.cancel(sequences[i].id);
        self->pending_.erase(sequences[i].id);
      }
      channel->close();
      return;
    }
    if (!self->idle_arrival_) self->idle_arrival_ = submitted;
    self->publish_state();
    self->wake_timer_.cancel();
  });
  return channel;
}

void SimEngineRunner::cancel(std::uint64_t id) {
  asio::post(strand_, [self = shared_from_this(), id] {
    self->engine_.cancel(id);
    self->pending_.erase(id);
    self->publish_state();
  });
}

void SimEngineRunner::stop() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->stopped_) return;
    self->stopped_ = true;
    self->step_timer_.cancel();
    self->wake_timer_.cancel();
    for (auto& [id, p] : self->pending_) p.channel->close();
    self->pending_.clear();
  });
}

void SimEngineRunner::publish_state() {
  metrics_.set_scheduler_state(engine_.running(), engine_.waiting(), engine_.kv_usage());
  const std::int64_t preemptions = engine_.preemptions_total();
  metrics_.add_preemptions(preemptions - reported_preemptions_);
  reported_preemptions_ = preemptions;
  const std::int64_t queries = engine_.prefix_cache_queries_total();
  const std::int64_t hits = engine_.prefix_cache_hits_total();
  metrics_.add_prefix_cache(queries - reported_prefix_queries_, hits - reported_prefix_hits_);
  reported_prefix_queries_ = queries;
  reported_prefix_hits_ = hits;
}

void SimEngineRunner::deliver(const StepOutcome& outcome, Clock::time_point now) {
  for (std::uint64_t id : outcome.emitted) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;  // cancelled while the step ran
    Pending& p = it->second;
    ++p.delivered;
    metrics_.add_generation_tokens(1);
    if (p.delivered == 1) {
      p.first_token = now;
      metrics_.observe_ttft_s(std::chrono::duration<double>(now - p.arrival).count());
    }
    p.channel->try_send(boost::system::error_code{}, p.sequence, p.delivered);
    if (p.delivered >= p.max_output_tokens) {
      if (p.delivered >= 2) {
        metrics_.observe_tpot_s(std::chrono::duration<double>(now - p.first_token).count() /
                                static_cast<double>(p.delivered - 1));
      }
      metrics_.add_request_success();
      pending_.erase(it);
    }
  }
}

asio::awaitable<void> SimEngineRunner::loop() {
  constexpr auto use_nothrow = asio::as_tuple(asio::use_awaitable);
  Clock::time_point deadline = Clock::now();
  bool busy = false;  // the previous step ended at `deadline` with more work pending
  while (!stopped_) {
    if (engine_.idle()) {
      busy = false;
      idle_arrival_.reset();
      wake_timer_.expires_at(Clock::time_point::max());
      co_await wake_timer_.async_wait(use_nothrow);
      continue;
    }
    const StepOutcome outcome = engine_.step();
    publish_state();
    if (outcome.scheduled_seqs == 0) {
      // Nothing could be scheduled (cannot happen for requests that passed admission checks);
      // wait for a change instead of spinning.
      busy = false;
      idle_arrival_.reset();
      wake_timer_.expires_at(Clock::time_point::max());
      co_await wake_timer_.async_wait(use_nothrow);
      continue;
    }
    const auto step = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(outcome.cost.total_s / time_scale_));
    const Clock::time_point now = Clock::now();
    // The engine's clock advances by each step's cost, not by how late this loop woke: a step
    // that ends late on a busy host is followed by the next one at once (catch-up), so the
    // simulated GPU's throughput does not shrink with the host's load. Only a loop more than
    // kMaxCatchUp behind gives the time up (and counts it), so a stalled host cannot make the
    // engine burst through a long backlog of steps.
    // An idle engine starts at the arrival that woke it, not when this loop got round to it
    // (the hop onto the strand and the wake-up are the host's time, not the GPU's), as virtual
    // time does (server/engine/virtual_step_backend.cc).
    if (busy && deadline + step + kMaxCatchUp > now) {
      deadline += step;
    } else if (!busy && idle_arrival_ && *idle_arrival_ <= now &&
               *idle_arrival_ + kMaxCatchUp > now) {
      deadline = *idle_arrival_ + step;
    } else {
      if (busy && deadline + step < now)
        lost_ns_.fetch_add(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - (deadline + step)).count(),
            std::memory_order_relaxed);
      deadline = now + step;
    }
    idle_arrival_.reset();
    busy = true;
    // Timers fire late by the host's wake-up latency (tens to hundreds of µs on a VM), which
    // would add to every first token and every step a client sees: aim that much earlier, by a
    // running average of how late the previous wake-ups were, so deliveries centre on the
    // engine's clock. The average is bounded (kMaxWakeLead): a stalled host is catch-up's and
    // lost time's business, not this.
    const Clock::time_point aim = deadline - wake_lead_;
    step_timer_.expires_at(aim);
    co_await step_timer_.async_wait(use_nothrow);
    if (stopped_) break;
    const Clock::duration late =
        std::clamp<Clock::duration>(Clock::now() - aim, Clock::duration::zero(), kMaxWakeLead);
    wake_lead_ += (late - wake_lead_) / 8;
    deliver(outcome, Clock::now());
    publish_state();
  }
}

}  // namespace llmcap::sim
