// Unit tests of TelemetryAccumulator on fixed exposition text (vLLM, DCGM, SGLang, llama.cpp).
#include "agent/telemetry_accumulator.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace llmcap::agent {
namespace {

std::string vllm_scrape(double running, double waiting, double kv, double preemptions,
                        const std::string& ttft_counts /* le=0.1,0.5,1,+Inf */,
                        double ttft_sum = 1) {
  std::string s =
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{model_name=\"m\"} " +
      std::to_string(running) +
      "\n"
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{model_name=\"m\"} " +
      std::to_string(waiting) +
      "\n"
      "# TYPE vllm:kv_cache_usage_perc gauge\n"
      "vllm:kv_cache_usage_perc{model_name=\"m\"} " +
      std::to_string(kv) +
      "\n"
      "# TYPE vllm:num_preemptions_total counter\n"
      "vllm:num_preemptions_total{model_name=\"m\"} " +
      std::to_string(preemptions) +
      "\n"
      "# TYPE unrelated_metric gauge\nunrelated_metric 5\n"
      "# TYPE vllm:time_to_first_token_seconds histogram\n";
  double c[4];
  std::sscanf(ttft_counts.c_str(), "%lf %lf %lf %lf", &c[0], &c[1], &c[2], &c[3]);
  const char* les[4] = {"0.1", "0.5", "1", "+Inf"};
  for (int i = 0; i < 4; ++i) {
    s += "vllm:time_to_first_token_seconds_bucket{le=\"" + std::string(les[i]) +
         "\",model_name=\"m\"} " + std::to_string(c[i]) + "\n";
  }
  s += "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} " + std::to_string(ttft_sum) + "\n";
  s += "vllm:time_to_first_token_seconds_count{model_name=\"m\"} " + std::to_string(c[3]) + "\n";
  return s;
}

TEST(TelemetryAccumulator, SummarisesVllmScrapes) {
  TelemetryAccumulator acc;
  acc.add_scrape(0, parse_prometheus_text(vllm_scrape(1, 0, 0.10, 4, "2 5 6 6")));
  acc.add_scrape(1'000'000'000, parse_prometheus_text(vllm_scrape(5, 3, 0.55, 6, "2 9 11 11")));
  acc.add_failure();
  acc.add_scrape(2'000'000'000, parse_prometheus_text(vllm_scrape(3, 1, 0.30, 9, "3 13 16 16")));
  const TelemetrySummary s = acc.summary();
  EXPECT_EQ(s.scrapes_ok, 3u);
  EXPECT_EQ(s.scrapes_failed, 1u);
  EXPECT_EQ(s.engines, std::vector<std::string>{"vllm"});
  EXPECT_DOUBLE_EQ(*s.kv_usage_max, 0.55);
  EXPECT_DOUBLE_EQ(*s.preemptions, 5.0);
  EXPECT_DOUBLE_EQ(*s.running_max, 5.0);
  EXPECT_DOUBLE_EQ(*s.running_mean, 3.0);
  EXPECT_DOUBLE_EQ(*s.waiting_max, 3.0);
  EXPECT_DOUBLE_EQ(*s.waiting_mean, 4.0 / 3.0);
  // Delta first→last: buckets 1, 8, 10, 10 → p50 rank 5 in (0.1,0.5]: 0.1 + 0.4*4/7.
  ASSERT_TRUE(s.server_ttft_p50_s);
  EXPECT_DOUBLE_EQ(*s.server_ttft_count, 10.0);
  EXPECT_NEAR(*s.server_ttft_p50_s, 0.1 + 0.4 * 4.0 / 7.0, 1e-12);
  // p95 rank 9.5 in (0.5,1]: 0.5 + 0.5*1.5/2.
  EXPECT_NEAR(*s.server_ttft_p95_s, 0.875, 1e-12);
  EXPECT_FALSE(s.power_w_mean);
  EXPECT_FALSE(s.server_tpot_p50_s);
  EXPECT_FALSE(s.server_tpot_mean_s);

  // Points: the known gauges/counter and the histogram's _sum/_count, not buckets, not others.
  std::size_t running_points = 0;
  for (const TelemetryPoint& p : acc.points()) {
    EXPECT_NE(p.series, "unrelated_metric");
    EXPECT_EQ(p.series.find("_bucket"), std::string::npos);
    if (p.series == "vllm:num_requests_running") {
      ++running_points;
      EXPECT_EQ(p.labels, "model_name=\"m\"");
    }
  }
  EXPECT_EQ(running_points, 3u);
  EXPECT_EQ(acc.points().back().t_ns, 2'000'000'000);

  const auto j = nlohmann::json::parse(telemetry_summary_json(s));
  EXPECT_DOUBLE_EQ(j["kv_usage_max"].get<double>(), 0.55);
  EXPECT_TRUE(j["power_w_mean"].is_null());
}

TEST(TelemetryAccumulator, PrefixCacheHitRateFromCounterIncreases) {
  const auto scrape = [](double queries, double hits) {
    return parse_prometheus_text(
        "# TYPE vllm:prefix_cache_queries counter\n"
        "vllm:prefix_cache_queries_total{model_name=\"m\"} " +
        std::to_string(queries) +
        "\n"
        "# TYPE vllm:prefix_cache_hits counter\n"
        "vllm:prefix_cache_hits_total{model_name=\"m\"} " +
        std::to_string(hits) + "\n");
  };
  TelemetryAccumulator acc;
  acc.add_scrape(0, scrape(1000, 100));
  acc.add_scrape(1, scrape(5000, 2500));
  const TelemetrySummary s = acc.summary();
  ASSERT_TRUE(s.prefix_cache_queries && s.prefix_cache_hits && s.prefix_cache_hit_rate);
  EXPECT_DOUBLE_EQ(*s.prefix_cache_queries, 4000);
  EXPECT_DOUBLE_EQ(*s.prefix_cache_hits, 2400);
  EXPECT_DOUBLE_EQ(*s.prefix_cache_hit_rate, 0.6);
  EXPECT_NE(telemetry_summary_json(s).find("\"prefix_cache_hit_rate\":0.6"), std::string::npos);
  // No queries during the step: no rate.
  TelemetryAccumulator idle;
  idle.add_scrape(0, scrape(10, 5));
  idle.add_scrape(1, scrape(10, 5));
  EXPECT_FALSE(idle.summary().prefix_cache_hit_rate);
}

TEST(TelemetryAccumulator, ServerMeanIsTheSumIncreaseOverTheCountIncrease) {
  // Exact, whatever the buckets: 10 first tokens observed during the step took 2.5 s in all.
  TelemetryAccumulator acc;
  acc.add_scrape(0, parse_prometheus_text(vllm_scrape(1, 0, 0.1, 0, "2 5 6 6", 1.5)));
  acc.add_scrape(1'000'000'000,
                 parse_prometheus_text(vllm_scrape(1, 0, 0.1, 0, "2 13 16 16", 4.0)));
  const TelemetrySummary s = acc.summary();
  ASSERT_TRUE(s.server_ttft_mean_s);
  EXPECT_DOUBLE_EQ(*s.server_ttft_mean_s, 0.25);
  EXPECT_NE(telemetry_summary_json(s).find("\"server_ttft_mean_s\":0.25"), std::string::npos);
  // Nothing observed during the step: no mean (not 0/0).
  TelemetryAccumulator idle;
  idle.add_scrape(0, parse_prometheus_text(vllm_scrape(1, 0, 0.1, 0, "2 5 6 6", 1.5)));
  idle.add_scrape(1'000'000'000, parse_prometheus_text(vllm_scrape(1, 0, 0.1, 0, "2 5 6 6", 1.5)));
  EXPECT_FALSE(idle.summary().server_ttft_mean_s);
  EXPECT_DOUBLE_EQ(*idle.summary().server_ttft_count, 0.0);
}

TEST(TelemetryAccumulator, OneScrapeGivesNoServerLatency) {
  TelemetryAccumulator acc;
  acc.add_scrape(0, parse_prometheus_text(vllm_scrape(1, 0, 0.1, 0, "1 2 3 3")));
  EXPECT_FALSE(acc.summary().server_ttft_p50_s);
  EXPECT_FALSE(acc.summary().server_ttft_mean_s);
  EXPECT_DOUBLE_EQ(*acc.summary().preemptions, 0.0);
}

TEST(TelemetryAccumulator, CounterResetCountsNewValue) {
  TelemetryAccumulator acc;
  acc.add_scrape(0, parse_prometheus_text(vllm_scrape(1, 0, 0.1, 50, "1 2 3 3")));
  acc.add_scrape(1, parse_prometheus_text(vllm_scrape(1, 0, 0.1, 2, "0 1 1 1")));
  EXPECT_DOUBLE_EQ(*acc.summary().preemptions, 2.0);
  EXPECT_DOUBLE_EQ(*acc.summary().server_ttft_count, 1.0);
}

TEST(TelemetryAccumulator, DcgmAcrossGpus) {
  auto scrape = [](double p0, double p1, double clk0, double clk1, double temp, int throttle) {
    return parse_prometheus_text(
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"a\"} " +
        std::to_string(p0) +
        "\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"b\"} " +
        std::to_string(p1) +
        "\n"
        "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\"} " +
        std::to_string(clk0) +
        "\n"
        "DCGM_FI_DEV_SM_CLOCK{gpu=\"1\"} " +
        std::to_string(clk1) +
        "\n"
        "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} " +
        std::to_string(temp) +
        "\n"
        "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\"} 40\n"
        "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 100\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 50\n"
        "DCGM_FI_DEV_FB_USED{gpu=\"0\"} 1000\nDCGM_FI_DEV_FB_USED{gpu=\"1\"} 2000\n"
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu=\"0\"} " +
        std::to_string(throttle) + "\n");
  };
  TelemetryAccumulator acc;
  acc.add_scrape(0, scrape(300, 310, 1980, 1980, 60, 0));
  acc.add_scrape(1, scrape(690, 700, 1755, 1980, 83, 4));
  acc.add_scrape(2, scrape(400, 400, 1980, 1900, 70, 32));
  const TelemetrySummary s = acc.summary();
  EXPECT_EQ(s.engines, std::vector<std::string>{"dcgm"});
  EXPECT_DOUBLE_EQ(*s.power_w_max, 1390.0);
  EXPECT_DOUBLE_EQ(*s.power_w_mean, (610.0 + 1390.0 + 800.0) / 3.0);
  EXPECT_DOUBLE_EQ(*s.sm_clock_mhz_min, 1755.0);
  EXPECT_DOUBLE_EQ(*s.sm_clock_mhz_max, 1980.0);
  EXPECT_DOUBLE_EQ(*s.gpu_temp_c_max, 83.0);
  EXPECT_DOUBLE_EQ(*s.gpu_util_pct_mean, 75.0);
  EXPECT_DOUBLE_EQ(*s.fb_used_mib_max, 3000.0);
  EXPECT_EQ(*s.clock_throttle_reasons, 36u);
  EXPECT_FALSE(s.kv_usage_max);
}

TEST(TelemetryAccumulator, OtherEnginesAndPointBound) {
  TelemetryAccumulatorOptions o;
  o.max_points = 3;
  TelemetryAccumulator acc(o);
  acc.add_scrape(0, parse_prometheus_text("sglang:num_running_reqs 4\nsglang:num_queue_reqs 2\n"
                                          "sglang:token_usage 0.7\nllamacpp:requests_processing 1\n"
                                          "tgi_queue_size NaN\n"));
  const TelemetrySummary s = acc.summary();
  EXPECT_EQ(s.engines, (std::vector<std::string>{"llamacpp", "sglang", "tgi"}));
  EXPECT_DOUBLE_EQ(*s.running_max, 5.0);
  EXPECT_DOUBLE_EQ(*s.waiting_max, 2.0);  // NaN queue of TGI ignored
  EXPECT_DOUBLE_EQ(*s.kv_usage_max, 0.7);
  EXPECT_EQ(acc.points().size(), 3u);
  EXPECT_EQ(s.points_dropped, 1u);
}

}  // namespace
}  // namespace llmcap::agent
