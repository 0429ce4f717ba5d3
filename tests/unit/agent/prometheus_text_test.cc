// Unit tests of the Prometheus text-format parser and the histogram helpers.
#include "agent/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace llmcap::agent {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(PrometheusText, ParsesFamiliesHelpTypeAndLabels) {
  const auto p = parse_prometheus_text(
      "# HELP vllm:num_requests_running Number of requests \\\\ in\\nbatches.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{model_name=\"llama\"} 3\n"
      "# TYPE vllm:num_preemptions_total counter\n"
      "vllm:num_preemptions_total{model_name=\"llama\",} 7 1700000000000\n"
      "# a plain comment\n"
      "\n"
      "up 1\n");
  EXPECT_EQ(p.error_count, 0u) << (p.errors.empty() ? "" : p.errors[0].message);
  ASSERT_EQ(p.families.size(), 3u);
  const MetricFamily* running = p.find("vllm:num_requests_running");
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->type, MetricType::kGauge);
  EXPECT_EQ(running->help, "Number of requests \\ in\nbatches.");
  ASSERT_EQ(running->samples.size(), 1u);
  EXPECT_EQ(running->samples[0].value, 3.0);
  ASSERT_NE(running->samples[0].label("model_name"), nullptr);
  EXPECT_EQ(*running->samples[0].label("model_name"), "llama");
  EXPECT_EQ(running->samples[0].label("other"), nullptr);
  const MetricFamily* pre = p.find("vllm:num_preemptions_total");
  ASSERT_NE(pre, nullptr);
  EXPECT_EQ(pre->type, MetricType::kCounter);
  EXPECT_EQ(pre->samples[0].timestamp_ms, 1700000000000);
  const MetricFamily* up = p.find("up");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->type, MetricType::kUntyped);
}

TEST(PrometheusText, LabelValueEscapes) {
  const auto p = parse_prometheus_text(
      "m{path=\"C:\\\\dir\",msg=\"say \\\"hi\\\"\",nl=\"a\\nb\",brace=\"}{,=\"} 1\n");
  ASSERT_EQ(p.error_count, 0u) << p.errors[0].message;
  const PromSample& s = p.families.at(0).samples.at(0);
  EXPECT_EQ(*s.label("path"), "C:\\dir");
  EXPECT_EQ(*s.label("msg"), "say \"hi\"");
  EXPECT_EQ(*s.label("nl"), "a\nb");
  EXPECT_EQ(*s.label("brace"), "}{,=");
  // Canonical text sorts names and re-escapes values.
  EXPECT_EQ(canonical_labels(s.labels, {"nl", "brace"}),
            "msg=\"say \\\"hi\\\"\",path=\"C:\\\\dir\"");
}

TEST(PrometheusText, SpecialValues) {
  const auto p = parse_prometheus_text("a NaN\nb +Inf\nc -Inf\nd 1.5e-3\ne -2\nf Inf\ng +4\n");
  ASSERT_EQ(p.error_count, 0u) << p.errors[0].message;
  EXPECT_TRUE(std::isnan(p.find("a")->samples[0].value));
  EXPECT_EQ(p.find("b")->samples[0].value, kInf);
  EXPECT_EQ(p.find("c")->samples[0].value, -kInf);
  EXPECT_DOUBLE_EQ(p.find("d")->samples[0].value, 0.0015);
  EXPECT_EQ(p.find("e")->samples[0].value, -2.0);
  EXPECT_EQ(p.find("f")->samples[0].value, kInf);
  EXPECT_EQ(p.find("g")->samples[0].value, 4.0);
}

TEST(PrometheusText, HistogramSamplesGroupUnderFamily) {
  const auto p = parse_prometheus_text(
      "# TYPE lat histogram\r\n"
      "lat_bucket{le=\"0.1\"} 1\r\n"
      "lat_bucket{le=\"1\"} 3\r\n"
      "lat_bucket{le=\"+Inf\"} 4\r\n"
      "lat_sum 2.5\r\n"
      "lat_count 4\r\n"
      "# TYPE sz summary\n"
      "sz{quantile=\"0.5\"} 3\nsz_sum 10\nsz_count 2\n");
  ASSERT_EQ(p.error_count, 0u) << p.errors[0].message;
  ASSERT_EQ(p.families.size(), 2u);
  const MetricFamily* lat = p.find("lat");
  ASSERT_NE(lat, nullptr);
  EXPECT_EQ(lat->type, MetricType::kHistogram);
  EXPECT_EQ(lat->samples.size(), 5u);
  EXPECT_EQ(p.find("sz")->samples.size(), 3u);
  const auto h = aggregate_histogram(*lat);
  ASSERT_TRUE(h);
  ASSERT_EQ(h->buckets.size(), 3u);
  EXPECT_EQ(h->buckets[2].upper_bound, kInf);
  EXPECT_EQ(h->count, 4.0);
  EXPECT_EQ(h->sum, 2.5);
}

TEST(PrometheusText, BadLinesAreReportedAndSkipped) {
  const auto p = parse_prometheus_text(
      "good 1\n"
      "bad{le=\"x\" 2\n"           // unterminated label set
      "bad2 abc\n"                 // not a number
      "bad3{a=b} 1\n"              // unquoted
      "bad4{a=\"\\q\"} 1\n"        // invalid escape
      "bad5{a=\"1\",a=\"2\"} 1\n"  // duplicate label
      "9bad 1\n"                   // invalid name
      "bad6 1 notatime\n"          // bad timestamp
      "bad7 1 2 3\n"               // trailing text
      "bad8\n"                     // no value
      "# TYPE t wibble\n"          // unknown type
      "also_good{x=\"y\"} 2\n");
  EXPECT_EQ(p.error_count, 10u);
  ASSERT_FALSE(p.errors.empty());
  EXPECT_EQ(p.errors[0].line, 2u);
  EXPECT_NE(p.errors[0].message.find("bad"), std::string::npos);
  EXPECT_NE(p.find("good"), nullptr);
  EXPECT_NE(p.find("also_good"), nullptr);
  EXPECT_EQ(p.find("bad2"), nullptr);
}

TEST(PrometheusText, TypeAfterSamplesAndDuplicatesAreErrors) {
  const auto p = parse_prometheus_text("x 1\n# TYPE x gauge\n# TYPE y gauge\n# TYPE y counter\n");
  EXPECT_EQ(p.error_count, 2u);
  EXPECT_EQ(p.find("x")->type, MetricType::kUntyped);
  EXPECT_EQ(p.find("y")->type, MetricType::kGauge);
}

TEST(PrometheusText, GarbageNeverThrowsAndErrorsAreBounded) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 200; ++round) {
    std::string text;
    for (int i = 0; i < 2000; ++i) text.push_back(static_cast<char>(byte(rng)));
    const auto p = parse_prometheus_text(text);
    EXPECT_LE(p.errors.size(), ParsedExposition::kMaxErrors);
    EXPECT_GE(p.error_count, p.errors.size());
  }
  const auto empty = parse_prometheus_text("");
  EXPECT_TRUE(empty.families.empty());
  EXPECT_EQ(empty.error_count, 0u);
}

HistogramData make(std::vector<std::pair<double, double>> buckets, double count) {
  HistogramData h;
  for (auto [le, c] : buckets) h.buckets.push_back({le, c});
  h.count = count;
  return h;
}

TEST(HistogramQuantile, MatchesPromqlInterpolation) {
  // 10 observations: 2 in (0,0.1], 6 in (0.1,0.5], 2 in (0.5,1].
  const auto h = make({{0.1, 2}, {0.5, 8}, {1.0, 10}, {kInf, 10}}, 10);
  // rank 5 lies in the second bucket: 0.1 + 0.4 * (5-2)/6 = 0.3.
  EXPECT_DOUBLE_EQ(*histogram_quantile(0.5, h), 0.3);
  // rank 9.5 in the third bucket: 0.5 + 0.5 * 1.5/2 = 0.875.
  EXPECT_DOUBLE_EQ(*histogram_quantile(0.95, h), 0.875);
  // rank 1 in the first bucket, lower bound 0: 0.1 * 1/2.
  EXPECT_DOUBLE_EQ(*histogram_quantile(0.1, h), 0.05);
  EXPECT_DOUBLE_EQ(*histogram_quantile(0.0, h), 0.0);
}

TEST(HistogramQuantile, InfBucketReturnsLargestFiniteBound) {
  const auto h = make({{0.1, 1}, {1.0, 2}, {kInf, 10}}, 10);
  EXPECT_DOUBLE_EQ(*histogram_quantile(0.95, h), 1.0);
}

TEST(HistogramQuantile, UndefinedCases) {
  EXPECT_FALSE(histogram_quantile(0.5, make({{0.1, 0}, {kInf, 0}}, 0)));  // no observations
  EXPECT_FALSE(histogram_quantile(0.5, make({{0.1, 1}, {1.0, 2}}, 2)));   // no +Inf
  EXPECT_FALSE(histogram_quantile(0.5, make({{kInf, 2}}, 2)));            // one bucket
  EXPECT_FALSE(histogram_quantile(1.5, make({{0.1, 1}, {kInf, 2}}, 2)));
  EXPECT_FALSE(histogram_quantile(std::nan(""), make({{0.1, 1}, {kInf, 2}}, 2)));
}

TEST(HistogramDelta, SubtractsBucketsAndHandlesResets) {
  const auto first = make({{0.1, 2}, {1.0, 5}, {kInf, 6}}, 6);
  const auto last = make({{0.1, 3}, {1.0, 15}, {kInf, 16}}, 16);
  const auto d = histogram_delta(first, last);
  ASSERT_EQ(d.buckets.size(), 3u);
  EXPECT_EQ(d.buckets[0].cumulative_count, 1);
  EXPECT_EQ(d.buckets[1].cumulative_count, 10);
  EXPECT_EQ(d.buckets[2].cumulative_count, 10);
  EXPECT_EQ(d.count, 10);
  // Counter reset: the later histogram is the increase.
  const auto reset = histogram_delta(last, first);
  EXPECT_EQ(reset.count, 6);
  EXPECT_EQ(reset.buckets[1].cumulative_count, 5);
}

TEST(AggregateHistogram, SumsAcrossLabelSets) {
  const auto p = parse_prometheus_text(
      "# TYPE t histogram\n"
      "t_bucket{m=\"a\",le=\"1\"} 1\nt_bucket{m=\"a\",le=\"+Inf\"} 2\nt_sum{m=\"a\"} 3\n"
      "t_count{m=\"a\"} 2\n"
      "t_bucket{m=\"b\",le=\"1.0\"} 4\nt_bucket{m=\"b\",le=\"+Inf\"} 4\nt_sum{m=\"b\"} 1\n"
      "t_count{m=\"b\"} 4\n");
  const auto h = aggregate_histogram(*p.find("t"));
  ASSERT_TRUE(h);
  ASSERT_EQ(h->buckets.size(), 2u);  // "1" and "1.0" are the same bound
  EXPECT_EQ(h->buckets[0].cumulative_count, 5);
  EXPECT_EQ(h->buckets[1].cumulative_count, 6);
  EXPECT_EQ(h->count, 6);
  EXPECT_EQ(h->sum, 4);
  EXPECT_FALSE(aggregate_histogram(MetricFamily{"none", MetricType::kHistogram, "", {}}));
}

}  // namespace
}  // namespace llmcap::agent
