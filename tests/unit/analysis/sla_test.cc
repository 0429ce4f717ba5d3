#include "analysis/sla.h"

#include <gtest/gtest.h>

#include "tests/unit/analysis/test_samples.h"

namespace llmcap::analysis {
namespace {

using testing::kMs;

TEST(SlaSpec, DefaultsAndExampleAreValid) {
  SlaSpec s;
  EXPECT_DOUBLE_EQ(s.max_error_rate, 0.01);
  EXPECT_EQ(s.ttft_definition, TtftDefinition::kIntended);
  EXPECT_FALSE(validate(s).has_value());
  EXPECT_FALSE(validate(example_interactive_sla()).has_value());
}

TEST(SlaSpec, ValidateNamesTheField) {
  SlaSpec s = example_interactive_sla();
  s.bounds[1].percentile = 100;
  ASSERT_TRUE(validate(s).has_value());
  EXPECT_EQ(validate(s)->rfind("bounds[1].percentile", 0), 0u) << *validate(s);
  EXPECT_NE(validate(s)->find("100"), std::string::npos);
  s = example_interactive_sla();
  s.bounds[0].limit_ms = 0;
  EXPECT_EQ(validate(s)->rfind("bounds[0].limit_ms", 0), 0u);
  s = example_interactive_sla();
  s.max_error_rate = 1.5;
  EXPECT_EQ(validate(s)->rfind("max_error_rate", 0), 0u);
  s = example_interactive_sla();
  s.rate_tolerance = -0.1;
  EXPECT_EQ(validate(s)->rfind("rate_tolerance", 0), 0u);
  s = example_interactive_sla();
  s.max_client_cpu_utilisation = 0;
  EXPECT_EQ(validate(s)->rfind("max_client_cpu_utilisation", 0), 0u);
  s = example_interactive_sla();
  s.max_schedule_lag_p99_ms = -1;
  EXPECT_EQ(validate(s)->rfind("max_schedule_lag_p99_ms", 0), 0u);
}

TEST(SlaSpec, NamesRoundTrip) {
  for (SlaMetric m : {SlaMetric::kTtft, SlaMetric::kTtftService, SlaMetric::kTpot, SlaMetric::kItl,
                      SlaMetric::kE2e}) {
    EXPECT_EQ(parse_sla_metric(to_string(m)), m);
  }
  EXPECT_FALSE(parse_sla_metric("latency").has_value());
  EXPECT_EQ(parse_ttft_definition("service"), TtftDefinition::kService);
  EXPECT_EQ(to_string(TtftDefinition::kIntended), "intended");
  EXPECT_FALSE(parse_ttft_definition("send").has_value());
}

TEST(RequestMetric, ValuesPerDefinition) {
  // Sent 300 ms late; first token 200 ms after the send; 11 tokens 10 ms apart.
  const auto s = testing::ok_sample(0, 1000 * kMs, 200 * kMs, 11, 10 * kMs, 300 * kMs);
  EXPECT_DOUBLE_EQ(*request_metric_ns(s, SlaMetric::kTtft, TtftDefinition::kIntended), 500 * kMs);
  EXPECT_DOUBLE_EQ(*request_metric_ns(s, SlaMetric::kTtft, TtftDefinition::kService), 200 * kMs);
  EXPECT_DOUBLE_EQ(*request_metric_ns(s, SlaMetric::kTtftService, TtftDefinition::kIntended),
                   200 * kMs);
  EXPECT_DOUBLE_EQ(*request_metric_ns(s, SlaMetric::kTpot, TtftDefinition::kIntended), 10 * kMs);
  EXPECT_DOUBLE_EQ(*request_metric_ns(s, SlaMetric::kItl, TtftDefinition::kIntended), 10 * kMs);
  EXPECT_DOUBLE_EQ(*request_metric_ns(s, SlaMetric::kE2e, TtftDefinition::kIntended), 600 * kMs);
}

TEST(MeetsSlos, EveryBoundPerRequest) {
  SlaSpec sla;
  sla.bounds = {{SlaMetric::kTtft, 95, 400}, {SlaMetric::kTpot, 95, 35}};
  EXPECT_TRUE(meets_slos(testing::ok_sample(0, 0, 200 * kMs), sla));
  EXPECT_FALSE(meets_slos(testing::ok_sample(0, 0, 500 * kMs), sla));                // TTFT
  EXPECT_FALSE(meets_slos(testing::ok_sample(0, 0, 200 * kMs, 50, 40 * kMs), sla));  // TPOT
  // Errors and incomplete requests are misses.
  EXPECT_FALSE(meets_slos(testing::failed_sample(0, 0, ErrorClass::kHttp5xx), sla));
  auto incomplete = testing::ok_sample(0, 0, 200 * kMs);
  incomplete.t_end_ns = -1;
  EXPECT_FALSE(meets_slos(incomplete, sla));
}

TEST(MeetsSlos, TtftDefinitionDecidesLaggedRequests) {
  SlaSpec sla;
  sla.bounds = {{SlaMetric::kTtft, 95, 400}};
  // 300 ms schedule lag + 200 ms service: 500 ms from intended, 200 ms from send.
  const auto lagged = testing::ok_sample(0, 0, 200 * kMs, 11, 10 * kMs, 300 * kMs);
  EXPECT_FALSE(meets_slos(lagged, sla));
  sla.ttft_definition = TtftDefinition::kService;
  EXPECT_TRUE(meets_slos(lagged, sla));
}

TEST(MeetsSlos, NotApplicableAndMissingValues) {
  SlaSpec sla;
  sla.bounds = {{SlaMetric::kTpot, 95, 35}, {SlaMetric::kItl, 99, 50}};
  // One token: no TPOT, no ITL → not applicable, holds.
  EXPECT_TRUE(meets_slos(testing::ok_sample(0, 0, 200 * kMs, 1), sla));
  // A successful response with no token has no TTFT: a miss.
  sla.bounds = {{SlaMetric::kTtft, 95, 1000}};
  auto no_token = testing::ok_sample(0, 0, 200 * kMs, 1);
  no_token.t_first_token_ns = no_token.t_last_token_ns = -1;
  EXPECT_FALSE(meets_slos(no_token, sla));
  // ITL bound checks the request's largest gap.
  sla.bounds = {{SlaMetric::kItl, 99, 50}};
  auto stalled = testing::ok_sample(0, 0, 200 * kMs);
  stalled.max_itl_ns = 80 * kMs;
  EXPECT_FALSE(meets_slos(stalled, sla));
}

}  // namespace
}  // namespace llmcap::analysis
