// User abandonment against the simulator (issue 21): the same open-loop step with and without
// half of its users leaving after their 4th token. The abandoned requests are their own class in
// the step (never failed), and the server side shows the freed slots: the simulator's
// vllm:num_requests_running and KV-cache usage, scraped from its /metrics, drop because it
// stops generating for a client that closed its connection.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "agent/step_runner.h"
#include "agent/telemetry_scraper.h"
#include "sim/sim_server.h"

namespace llmcap::agent {
namespace {

namespace asio = boost::asio;

// A SimServer on two io threads for the duration of a test.
class AbandonSim {
 public:
  explicit AbandonSim(sim::SimOptions o) : server_(io_, std::move(o)) {
    server_.start();
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~AbandonSim() {
    server_.stop();
    work_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
  }
  std::uint16_t port() const { return server_.port(); }

 private:
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{
      asio::make_work_guard(io_)};
  sim::SimServer server_;
  std::vector<std::thread> threads_;
};

std::int64_t abandon_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Measured {
  StepResult result;
  TelemetrySummary server;
};

Measured run_step(const AbandonSim& sim, AbandonSpec abandon, std::int32_t input_tokens = 256,
                  double rate = 12, double duration_s = 3) {
  StepSpec s;
  s.target.base_url = "http://127.0.0.1:" + std::to_string(sim.port());
  s.workload.input_tokens = analysis::LengthDistribution::fixed(input_tokens);
  s.workload.output_tokens = analysis::LengthDistribution::fixed(1500);
  s.workload.calibrate = false;
  s.workload.abandon = abandon;
  s.load.kind = LoadKind::kOpen;
  s.load.rate = RateProfile::constant(rate);
  s.load.inter_arrival = InterArrival::kConstant;
  s.duration_s = duration_s;
  s.drain = DrainPolicy::kCancel;
  s.seed = 21;
  TelemetryScraperOptions so;
  so.metrics_url = s.target.base_url + "/metrics";
  so.interval_ns = 100'000'000;
  TelemetryScraper scraper(so);
  scraper.start(abandon_now_ns());
  Measured out;
  out.result = StepRunner().run(s);
  out.server = scraper.stop().summary;
  return out;
}

TEST(SimAbandon, AbandonedRequestsAreCountedApartAndFreeTheirSlots) {
  sim::SimOptions o;
  o.hardware = "a100-80g-pcie";
  o.model = "llama-3.1-8b";
  o.port = 0;
  o.seed = 3;
  o.time_scale = 10;  // 1500 tokens take ~3 s of wall time: every request outlives the window
  AbandonSim sim(o);

  const Measured base = run_step(sim, {});
  const AbandonSpec abandon{0.5, 0, 4};
  const Measured left = run_step(sim, abandon);
  for (const Measured* r : {&base, &left}) {
    ASSERT_TRUE(r->result.fatal_error.empty()) << r->result.fatal_error;
    ASSERT_TRUE(r->server.running_mean && r->server.kv_usage_max);
  }
  EXPECT_EQ(base.result.counts.abandoned, 0u);
  EXPECT_EQ(base.result.counts.failed, 0u);
  std::uint64_t picked = 0, seen = 0;
  for (const auto& x : left.result.samples) {
    if (!abandons(abandon, 21, x.index)) continue;
    ++picked;
    // Abandoned after its 4th token, unless the step's drain cancelled it first.
    if (x.error == analysis::ErrorClass::kAbandoned) {
      ++seen;
      EXPECT_EQ(x.token_events, 4u);
    } else {
      EXPECT_EQ(x.error, analysis::ErrorClass::kCancelled) << x.error_message;
    }
  }
  EXPECT_EQ(left.result.counts.abandoned, seen);
  EXPECT_GT(seen, 10u);
  EXPECT_EQ(left.result.counts.failed, 0u);
  std::printf(
      "sim running requests mean %.1f -> %.1f, KV usage max %.3f -> %.3f with %llu of %zu "
      "requests abandoned after 4 tokens\n",
      *base.server.running_mean, *left.server.running_mean, *base.server.kv_usage_max,
      *left.server.kv_usage_max, static_cast<unsigned long long>(seen), left.result.samples.size());
  // Half the users leave early: the server runs about half as many requests (Little's law)
  // and holds less KV cache.
  EXPECT_LT(*left.server.running_mean, 0.75 * *base.server.running_mean);
  EXPECT_LT(*left.server.kv_usage_max, *base.server.kv_usage_max);
  (void)picked;
}

// Users who leave before their first token: the simulator watches the connection and drops the
// request while it is still prefilling, so it never produces a first token (its own TTFT
// histogram stays empty) — before, it noticed only when it wrote that token.
TEST(SimAbandon, UsersLeavingDuringPrefillNeverGetAFirstTokenComputed) {
  sim::SimOptions o;
  o.hardware = "a100-80g-pcie";
  o.model = "llama-3.1-8b";
  o.port = 0;
  o.seed = 3;
  o.time_scale = 1;  // 6000 prompt tokens: three chunked-prefill steps, about 0.5 s to the token
  o.enable_prefix_caching = false;
  AbandonSim sim(o);
  const Measured left = run_step(sim, AbandonSpec{1.0, 100, 0}, 6000, 2, 2);
  ASSERT_TRUE(left.result.fatal_error.empty()) << left.result.fatal_error;
  EXPECT_GE(left.result.counts.abandoned, 3u);
  for (const auto& x : left.result.samples) EXPECT_EQ(x.token_events, 0u);
  ASSERT_TRUE(left.server.server_ttft_count);
  EXPECT_EQ(*left.server.server_ttft_count, 0);
  ASSERT_TRUE(left.server.running_mean);
  std::printf("abandoned after 100 ms of a ~0.5 s prefill: %llu requests, sim first tokens %.0f\n",
              static_cast<unsigned long long>(left.result.counts.abandoned),
              *left.server.server_ttft_count);
}

}  // namespace
}  // namespace llmcap::agent
