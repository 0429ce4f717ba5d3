#include "agent/step_spec.h"

#include <gtest/gtest.h>

namespace llmcap::agent {
namespace {

bool has(const std::vector<std::string>& errors, const std::string& prefix) {
  for (const auto& e : errors)
    if (e.rfind(prefix, 0) == 0) return true;
  return false;
}

StepSpec valid() {
  StepSpec s;
  s.target.base_url = "http://127.0.0.1:8000";
  return s;
}

TEST(StepSpec, PrefixGroupsFollowTheirSharesByIndex) {
  EXPECT_EQ(prefix_group_of({}, 1, 0), -1);
  const std::vector<PrefixGroup> groups = {{0.7, 1024}, {0.2, 512}, {0.1, 16}};
  int counts[3] = {0, 0, 0};
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const int g = prefix_group_of(groups, 7, i);
    ASSERT_GE(g, 0);
    ASSERT_LT(g, 3);
    ++counts[g];
    ASSERT_EQ(g, prefix_group_of(groups, 7, i));  // a pure function of seed and index
  }
  EXPECT_NEAR(counts[0] / 20000.0, 0.7, 0.015);
  EXPECT_NEAR(counts[1] / 20000.0, 0.2, 0.015);
  EXPECT_NEAR(counts[2] / 20000.0, 0.1, 0.015);
}

TEST(StepSpec, MixClassesFollowTheirWeightsByIndex) {
  EXPECT_EQ(mix_class_of({}, 1, 0), -1);
  std::vector<MixClassSpec> mix(3);
  mix[0].weight = 0.7;
  mix[1].weight = 0.2;
  mix[2].weight = 0.1;
  int counts[3] = {0, 0, 0};
  int same_as_group = 0;
  const std::vector<PrefixGroup> groups = {{0.7, 1}, {0.2, 1}, {0.1, 1}};
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const int c = mix_class_of(mix, 7, i);
    ASSERT_GE(c, 0);
    ASSERT_LT(c, 3);
    ++counts[c];
    ASSERT_EQ(c, mix_class_of(mix, 7, i));  // a pure function of seed and index
    same_as_group += c == prefix_group_of(groups, 7, i) ? 1 : 0;
  }
  EXPECT_NEAR(counts[0] / 20000.0, 0.7, 0.015);
  EXPECT_NEAR(counts[1] / 20000.0, 0.2, 0.015);
  EXPECT_NEAR(counts[2] / 20000.0, 0.1, 0.015);
  // Its own salt: independent of the prefix groups (0.7² + 0.2² + 0.1² = 0.54 agree by chance).
  EXPECT_NEAR(same_as_group / 20000.0, 0.54, 0.02);
  // Another seed assigns other classes.
  int moved = 0;
  for (std::uint64_t i = 0; i < 1000; ++i)
    moved += mix_class_of(mix, 7, i) != mix_class_of(mix, 8, i);
  EXPECT_GT(moved, 300);
  EXPECT_NE(mix_class_seed(7, 0), mix_class_seed(7, 1));
  EXPECT_EQ(mix_class_seed(7, 1), mix_class_seed(7, 1));
}

TEST(StepSpec, MixPlannedMeansAreWeighted) {
  WorkloadSpec w;
  EXPECT_DOUBLE_EQ(w.planned_input_mean(), 256);
  w.mix.resize(2);
  w.mix[0].weight = 0.75;
  w.mix[0].input_tokens = analysis::LengthDistribution::fixed(100);
  w.mix[0].output_tokens = analysis::LengthDistribution::fixed(400);
  w.mix[1].weight = 0.25;
  w.mix[1].input_tokens = analysis::LengthDistribution::fixed(4000);
  w.mix[1].output_tokens = analysis::LengthDistribution::fixed(40);
  EXPECT_DOUBLE_EQ(w.planned_input_mean(), 75 + 1000);
  EXPECT_DOUBLE_EQ(w.planned_output_mean(), 300 + 10);
}

TEST(StepSpec, BadMixFieldsAreNamed) {
  StepSpec s = valid();
  s.workload.mix.resize(2);
  s.workload.mix[0].weight = 0.5;
  s.workload.mix[1].weight = 0;
  s.workload.mix[1].input_tokens.min_tokens = -1;
  s.workload.shared_prefix_tokens = 8;
  const auto e = validate(s);
  EXPECT_TRUE(has(e, "workload.mix[1].weight: must be > 0"));
  EXPECT_TRUE(has(e, "workload.mix[1].input_tokens"));
  EXPECT_TRUE(has(e, "workload.mix: the weights must sum to 1"));
  EXPECT_TRUE(has(e, "workload.mix: give prefix_tokens per class"));
}

TEST(StepSpec, DefaultsWithATargetAreValid) { EXPECT_TRUE(validate(valid()).empty()); }

TEST(StepSpec, EveryBadFieldIsNamed) {
  StepSpec s = valid();
  s.target.base_url = "gopher://x";
  s.target.headers = {{"Bad Name", "v"}, {"X-Ok", "a\r\nInjected: 1"}};
  s.deadlines.connect_ms = 0;
  s.workload.input_tokens.kind = analysis::LengthDistribution::Kind::kUniform;
  s.workload.input_tokens.low = 10;
  s.workload.input_tokens.high = 5;
  s.workload.extra_body_json = "[]";
  s.load.concurrency = 0;
  s.duration_s = 0;
  const auto e = validate(s);
  EXPECT_TRUE(has(e, "target.base_url: "));
  EXPECT_TRUE(has(e, "target.headers[0]"));
  EXPECT_TRUE(has(e, "target.headers[1]"));
  EXPECT_TRUE(has(e, "deadlines.connect_ms"));
  EXPECT_TRUE(has(e, "workload.input_tokens"));
  EXPECT_TRUE(has(e, "workload.extra_body: must be a JSON object"));
  EXPECT_TRUE(has(e, "load.concurrency"));
  EXPECT_TRUE(has(e, "duration_s"));
}

TEST(StepSpec, OpenLoopFields) {
  StepSpec s = valid();
  s.load.kind = LoadKind::kOpen;
  s.load.rate = RateProfile::from_segments({{0, 1, -3, 1}});
  s.load.burstiness = 0;
  s.load.in_flight_cap = 0;
  const auto e = validate(s);
  EXPECT_TRUE(has(e, "load.rate: rate profile segment 0"));
  EXPECT_TRUE(has(e, "load.burstiness"));
  EXPECT_TRUE(has(e, "load.in_flight_cap"));
}

TEST(StepSpec, DatasetNeedsAPath) {
  StepSpec s = valid();
  s.workload.source = WorkloadSource::kDataset;
  EXPECT_TRUE(has(validate(s), "workload.dataset_path"));
}

}  // namespace
}  // namespace llmcap::agent
