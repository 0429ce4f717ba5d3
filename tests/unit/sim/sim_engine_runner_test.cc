#include "sim/sim_engine_runner.h"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <thread>

#include "sim/profile_catalog.h"

namespace llmcap::sim {
namespace {

namespace asio = boost::asio;

BatchEngine engine(std::int64_t blocks = 10000) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  EngineConfig cfg;
  cfg.kv_pool_blocks = blocks;
  return BatchEngine(
      Roofline(*c.model("llama-3.1-8b"), *c.hardware("h100-sxm"), analysis::Dtype::kBf16), cfg);
}

// Receives every token update of one request; records the counts seen.
asio::awaitable<void> drain(std::shared_ptr<SimEngineRunner::TokenChannel> ch, std::int64_t want,
                            std::vector<std::int64_t>& seen, bool& closed) {
  while (true) {
    auto [ec, sequence, n] = co_await ch->async_receive(asio::as_tuple(asio::use_awaitable));
    if (ec) {
      closed = true;
      co_return;
    }
    seen.push_back(n);
    if (n == want) co_return;
  }
}

TEST(SimEngineRunnerTest, DeliversCumulativeCountsOnTimersAndUpdatesMetrics) {
  asio::io_context io;
  SimMetrics metrics("m");
  auto runner = SimEngineRunner::create(io, engine(), 10.0, metrics);
  runner->start();
  std::vector<std::int64_t> a, b;
  bool closed_a = false, closed_b = false;
  asio::co_spawn(io, drain(runner->submit(1, 100, 5, io.get_executor()), 5, a, closed_a),
                 asio::detached);
  asio::co_spawn(io, drain(runner->submit(2, 50, 3, io.get_executor()), 3, b, closed_b),
                 asio::detached);
  const auto start = std::chrono::steady_clock::now();
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer t(io);
        while (a.size() < 5 || b.size() < 3) {
          t.expires_after(std::chrono::milliseconds(1));
          co_await t.async_wait(asio::use_awaitable);
        }
        runner->stop();
      },
      asio::detached);
  io.run_for(std::chrono::seconds(10));
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(a, (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(b, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_FALSE(closed_a);
  // Five steps of ≥ 2 ms overhead each at time_scale 10: at least 1 ms of real time passed.
  EXPECT_GE(elapsed_s, 0.001);
  const std::string text = metrics.serialize();
  EXPECT_NE(text.find("vllm:generation_tokens_total{model_name=\"m\"} 8"), std::string::npos)
      << text;
  EXPECT_NE(text.find("vllm:request_success_total{model_name=\"m\"} 2"), std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_count{model_name=\"m\"} 2"),
            std::string::npos);
}

TEST(SimEngineRunnerTest, RejectedRequestClosesChannelAndStopClosesOpenOnes) {
  asio::io_context io;
  SimMetrics metrics("m");
  auto runner = SimEngineRunner::create(io, engine(4), 1.0, metrics);  // 64-token pool
  runner->start();
  std::vector<std::int64_t> rejected_seen, long_seen;
  bool rejected_closed = false, long_closed = false;
  asio::co_spawn(
      io, drain(runner->submit(1, 100, 5, io.get_executor()), 5, rejected_seen, rejected_closed),
      asio::detached);
  asio::co_spawn(io,
                 drain(runner->submit(2, 10, 50, io.get_executor()), 50, long_seen, long_closed),
                 asio::detached);
  asio::steady_timer t(io);
  t.expires_after(std::chrono::milliseconds(100));
  t.async_wait([&](boost::system::error_code) { runner->stop(); });
  io.run_for(std::chrono::seconds(10));
  EXPECT_TRUE(rejected_closed);
  EXPECT_TRUE(rejected_seen.empty());
  EXPECT_TRUE(long_closed);  // 50 tokens × ≈ 8 ms do not finish in 100 ms
  EXPECT_FALSE(long_seen.empty());
  EXPECT_LT(long_seen.back(), 50);
}

TEST(SimEngineRunnerTest, SequencesOfOneSubmissionReportOnOneChannelByIndex) {
  // n > 1: the choices of a request are separate engine requests (their own lengths) whose
  // updates share one channel, each naming its index.
  asio::io_context io;
  SimMetrics metrics("m");
  auto runner = SimEngineRunner::create(io, engine(), 20.0, metrics);
  runner->start();
  std::vector<EngineRequest> choices;
  choices.push_back(EngineRequest{11, 40, 3});
  choices.push_back(EngineRequest{12, 40, 6});
  auto channel = runner->submit(std::move(choices), io.get_executor());
  std::vector<std::vector<std::int64_t>> seen(2);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        while (seen[0].size() < 3 || seen[1].size() < 6) {
          auto [ec, sequence, n] =
              co_await channel->async_receive(asio::as_tuple(asio::use_awaitable));
          if (ec) break;
          seen.at(sequence).push_back(n);
        }
        runner->stop();
      },
      asio::detached);
  io.run_for(std::chrono::seconds(10));
  EXPECT_EQ(seen[0], (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(seen[1], (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
  const std::string text = metrics.serialize();
  EXPECT_NE(text.find("vllm:generation_tokens_total{model_name=\"m\"} 9"), std::string::npos)
      << text;
}

TEST(SimEngineRunnerTest, AHostStallPastTheCatchUpWindowIsCountedAsLostTime) {
  // The engine keeps its own clock: a late wake-up within kMaxCatchUp is caught up by the next
  // steps; a longer stall of the host (here: 300 ms of blocking work on the runner's thread) is
  // given up and counted, so the step that saw it can say the host, not the GPU, was slow.
  asio::io_context io;
  SimMetrics metrics("m");
  auto runner = SimEngineRunner::create(io, engine(), 2.0, metrics);
  runner->start();
  std::vector<std::int64_t> seen;
  bool closed = false;
  asio::co_spawn(io, drain(runner->submit(1, 100, 400, io.get_executor()), 400, seen, closed),
                 asio::detached);
  std::int64_t lost_before_stall = -1;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer t(io);
        t.expires_after(std::chrono::milliseconds(50));
        co_await t.async_wait(asio::use_awaitable);
        lost_before_stall = runner->lost_ns();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the host stalls
        while (seen.empty() || seen.back() < 400) {
          t.expires_after(std::chrono::milliseconds(2));
          co_await t.async_wait(asio::use_awaitable);
        }
        runner->stop();
      },
      asio::detached);
  io.run_for(std::chrono::seconds(20));
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), 400);
  EXPECT_GE(lost_before_stall, 0);
  const std::int64_t lost = runner->lost_ns() - lost_before_stall;
  // 300 ms stalled, of which at most kMaxCatchUp (25 ms) plus one step is caught up.
  EXPECT_GE(lost, 200'000'000) << lost;
  EXPECT_LT(lost, 5'000'000'000) << lost;
}

}  // namespace
}  // namespace llmcap::sim
