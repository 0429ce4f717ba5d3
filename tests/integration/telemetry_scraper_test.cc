// Integration tests of TelemetryScraper: a real SimServer on 127.0.0.1:0 in this process, loaded
// by a few blocking clients while the scraper reads its vLLM-style /metrics; plus the failure
// paths (nothing listening, wrong path, bad URL) which must be errors, never a crash.
#include "agent/telemetry_scraper.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/time.h>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "sim/sim_server.h"

namespace llmcap::agent {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::int64_t scraper_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One blocking completion request on a fresh connection; returns the HTTP status (0 = failed).
int complete(std::uint16_t port, int max_tokens) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  stream.socket().connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return 0;
  // Synchronous Beast operations ignore tcp_stream's expiry: bound them with SO_RCVTIMEO.
  timeval tv{20, 0};
  ::setsockopt(stream.socket().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  http::request<http::string_body> req(http::verb::post, "/v1/completions", 11);
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  std::string prompt;
  for (int i = 0; i < 200; ++i) prompt += "w" + std::to_string(i) + " ";
  req.body() = nlohmann::json{
      {"model", "llama-3.1-8b"},
      {"prompt", prompt},
      {"max_tokens", max_tokens},
      {"ignore_eos",
       true}}.dump();
  req.prepare_payload();
  http::write(stream, req, ec);
  if (ec) return 0;
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res, ec);
  if (ec) return 0;
  return res.result_int();
}

// A SimServer on two io threads for the duration of a test.
class ScraperSim {
 public:
  explicit ScraperSim(sim::SimOptions o) : server_(io_, std::move(o)) {
    server_.start();
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~ScraperSim() {
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

TEST(TelemetryScraperTest, CollectsKvUsageAndQueueFromSimulator) {
  sim::SimOptions o;
  o.hardware = "rtx4090-48g";
  o.model = "llama-3.1-8b";
  o.port = 0;
  o.seed = 3;
  o.time_scale = 1;    // real time: the scraper must see the batch while it runs
  o.max_num_seqs = 2;  // 6 clients on 2 slots: requests queue in the server
  o.max_model_len = 4096;
  ScraperSim sim(o);

  TelemetryScraperOptions so;
  so.metrics_url = "http://127.0.0.1:" + std::to_string(sim.port()) + "/metrics";
  so.interval_ns = 100'000'000;
  so.timeout_ns = 2'000'000'000;
  TelemetryScraper scraper(so);
  const std::int64_t epoch = scraper_now_ns();
  scraper.start(epoch);

  constexpr int kClients = 6;
  constexpr int kRequestsEach = 2;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      for (int r = 0; r < kRequestsEach; ++r) {
        if (complete(sim.port(), 24) == 200) ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  const std::int64_t load_end = scraper_now_ns() - epoch;
  const TelemetryResult result = scraper.stop();
  ASSERT_EQ(ok.load(), kClients * kRequestsEach);

  for (const std::string& e : result.errors) ADD_FAILURE() << "scrape error: " << e;
  const TelemetrySummary& s = result.summary;
  EXPECT_EQ(s.engines, std::vector<std::string>{"vllm"});
  EXPECT_GE(s.scrapes_ok, 5u) << "load lasted " << load_end / 1e6 << " ms";
  EXPECT_EQ(s.scrapes_failed, 0u);

  std::size_t kv_points = 0, waiting_points = 0, running_points = 0;
  std::int64_t last_t = -1;
  for (const TelemetryPoint& p : result.points) {
    EXPECT_GE(p.t_ns, 0);
    EXPECT_GE(p.t_ns, last_t);  // scrape order
    last_t = p.t_ns;
    if (p.series == "vllm:kv_cache_usage_perc") {
      ++kv_points;
      EXPECT_GE(p.value, 0.0);
      EXPECT_LE(p.value, 1.0);
      EXPECT_EQ(p.labels, "model_name=\"llama-3.1-8b\"");
    }
    if (p.series == "vllm:num_requests_waiting") ++waiting_points;
    if (p.series == "vllm:num_requests_running") {
      ++running_points;
      EXPECT_LE(p.value, 2.0);  // max_num_seqs
    }
  }
  EXPECT_EQ(kv_points, s.scrapes_ok);
  EXPECT_EQ(waiting_points, s.scrapes_ok);
  EXPECT_EQ(running_points, s.scrapes_ok);

  ASSERT_TRUE(s.kv_usage_max);
  EXPECT_GT(*s.kv_usage_max, 0.0);
  EXPECT_LE(*s.kv_usage_max, 1.0);
  ASSERT_TRUE(s.running_max);
  EXPECT_EQ(*s.running_max, 2.0);  // the batch was full while 6 clients waited
  ASSERT_TRUE(s.waiting_max);
  EXPECT_GE(*s.waiting_max, 1.0);
  // Admission happens at the engine's step boundary, so right after a request finishes its
  // slot may still be free while the client's next request waits: waiting can briefly reach
  // kClients - 1 (or kClients). What must hold in every scrape is running + waiting <= kClients.
  EXPECT_LE(*s.waiting_max, static_cast<double>(kClients));
  std::map<std::int64_t, double> queued_at;  // scrape time -> running + waiting
  for (const TelemetryPoint& p : result.points) {
    if (p.series == "vllm:num_requests_waiting" || p.series == "vllm:num_requests_running")
      queued_at[p.t_ns] += p.value;
  }
  for (const auto& [t_ns, n] : queued_at) {
    EXPECT_LE(n, static_cast<double>(kClients)) << "scrape at " << t_ns / 1e6 << " ms";
  }
  ASSERT_TRUE(s.running_mean);
  EXPECT_GT(*s.running_mean, 0.0);
  ASSERT_TRUE(s.preemptions);
  EXPECT_GE(*s.preemptions, 0.0);
  // Server-side TTFT from the histogram delta: every request started after the first scrape
  // (give or take the very first ones), and the final scrape at stop() saw them all.
  ASSERT_TRUE(s.server_ttft_count);
  EXPECT_GE(*s.server_ttft_count, kClients * kRequestsEach - 2.0);
  EXPECT_LE(*s.server_ttft_count, kClients * kRequestsEach);
  ASSERT_TRUE(s.server_ttft_p50_s);
  ASSERT_TRUE(s.server_ttft_p95_s);
  EXPECT_GT(*s.server_ttft_p50_s, 0.0);
  EXPECT_LE(*s.server_ttft_p50_s, *s.server_ttft_p95_s);
  EXPECT_LT(*s.server_ttft_p95_s, 20.0);
  EXPECT_FALSE(s.power_w_mean);  // the simulator exports no DCGM series
  std::printf(
      "scrapes=%zu points=%zu kv_max=%.4f running_max=%.0f waiting_max=%.0f "
      "waiting_mean=%.2f ttft_p50=%.4fs ttft_p95=%.4fs ttft_n=%.0f tpot_p50=%.4fs\n",
      s.scrapes_ok, result.points.size(), *s.kv_usage_max, *s.running_max, *s.waiting_max,
      *s.waiting_mean, *s.server_ttft_p50_s, *s.server_ttft_p95_s, *s.server_ttft_count,
      s.server_tpot_p50_s.value_or(-1));
}

std::uint16_t closed_port() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const std::uint16_t port = a.local_endpoint().port();
  a.close();
  return port;
}

TEST(TelemetryScraperTest, UnreachableEndpointIsErrorsNotACrash) {
  TelemetryScraperOptions so;
  so.metrics_url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/metrics";
  so.interval_ns = 50'000'000;
  so.timeout_ns = 500'000'000;
  TelemetryScraper scraper(so);
  scraper.start(scraper_now_ns());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = std::chrono::steady_clock::now();
  const TelemetryResult r = scraper.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(r.summary.scrapes_ok, 0u);
  EXPECT_GE(r.summary.scrapes_failed, 3u);
  EXPECT_TRUE(r.points.empty());
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors[0].find(so.metrics_url), std::string::npos) << r.errors[0];
  // Repeats are folded: one message plus one "repeated" line, not one per scrape.
  EXPECT_LE(r.errors.size(), 2u);
  EXPECT_FALSE(r.summary.kv_usage_max);
}

TEST(TelemetryScraperTest, WrongPathAndBadUrlAreReported) {
  sim::SimOptions o;
  o.port = 0;
  o.max_model_len = 4096;
  ScraperSim sim(o);
  TelemetryScraperOptions so;
  so.metrics_url = "http://127.0.0.1:" + std::to_string(sim.port()) + "/no-such-metrics";
  so.interval_ns = 50'000'000;
  TelemetryScraper scraper(so);
  scraper.start(scraper_now_ns());
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  const TelemetryResult r = scraper.stop();
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors[0].find("HTTP 404"), std::string::npos) << r.errors[0];
  EXPECT_GE(r.summary.scrapes_failed, 2u);

  for (const std::string url : {"", "ftp://x/metrics", "not a url", "http://:99999/metrics"}) {
    TelemetryScraperOptions bad;
    bad.metrics_url = url;
    TelemetryScraper s(bad);
    s.start(scraper_now_ns());
    const TelemetryResult br = s.stop();
    ASSERT_EQ(br.errors.size(), 1u) << url;
    EXPECT_NE(br.errors[0].find("metrics_url"), std::string::npos) << br.errors[0];
  }
  // stop() without start(), and destruction while running, are safe.
  TelemetryScraper never_started(so);
  EXPECT_TRUE(never_started.stop().points.empty());
  TelemetryScraper destroyed_running(so);
  destroyed_running.start(scraper_now_ns());
}

}  // namespace
}  // namespace llmcap::agent
