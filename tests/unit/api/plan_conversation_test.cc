// Tests of workload.conversation in parse_plan() (api/plan_reader.h, docs/plans.md
// "Conversations"): every key read, defaults, the normalised form parsed again, and each bad
// value, misplaced combination (dataset, trace, request-count steps, trace_replay) and unknown
// key reported at its JSON path.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "api/plan_reader.h"

namespace llmcap::api {
namespace {

using nlohmann::json;

json conv_minimal() {
  return json::parse(R"({
    "version": 1,
    "targets": [{"name": "a", "base_url": "sim://rtx4090-48g/llama-3.1-8b", "api": "chat"}],
    "phases": [{"kind": "concurrency_sweep", "levels": [1, 2]}]
  })");
}

PlanParse conv_parse(const json& plan) { return parse_plan(plan.dump()); }

std::string conv_describe(const PlanParse& p) {
  std::string s;
  for (const auto& e : p.errors) s += "  " + e.path + ": " + e.message + "\n";
  return s;
}

bool conv_has_error(const PlanParse& p, const std::string& path, const std::string& text) {
  return std::any_of(p.errors.begin(), p.errors.end(), [&](const FieldError& e) {
    return e.path == path && e.message.find(text) != std::string::npos;
  });
}

#define EXPECT_ERROR(parse_result, path, text)                                        \
  EXPECT_TRUE(conv_has_error(parse_result, path, text))                               \
      << "expected error at '" << (path) << "' containing '" << (text) << "', got:\n" \
      << conv_describe(parse_result)

TEST(PlanConversation, EveryKeyIsReadAndTheNormalisedPlanParsesAgain) {
  json j = conv_minimal();
  j["workload"] = {{"conversation",
                    {{"turns", {{"low", 2}, {"high", 6}}},
                     {"user_tokens", 48},
                     {"think_time_s", 3.5},
                     {"think_time", "exponential"},
                     {"max_context_tokens", 8192}}}};
  auto p = conv_parse(j);
  ASSERT_TRUE(p.plan) << conv_describe(p);
  const auto& c = *p.plan->workload.conversation;
  EXPECT_EQ(c.turns_low, 2);
  EXPECT_EQ(c.turns_high, 6);
  EXPECT_EQ(c.user_tokens.mean, 48);
  EXPECT_DOUBLE_EQ(c.think_time_s, 3.5);
  EXPECT_EQ(c.think_time, "exponential");
  EXPECT_EQ(c.max_context_tokens, 8192);
  const json& n = p.normalized["workload"]["conversation"];
  EXPECT_EQ(n["turns"], json({{"low", 2}, {"high", 6}}));
  EXPECT_EQ(n["max_context_tokens"], 8192);
  auto again = conv_parse(p.normalized);
  ASSERT_TRUE(again.plan) << conv_describe(again);
  EXPECT_EQ(again.normalized, p.normalized);

  j["workload"]["conversation"] = {{"turns", 4}};
  p = conv_parse(j);
  ASSERT_TRUE(p.plan) << conv_describe(p);
  const auto& d = *p.plan->workload.conversation;
  EXPECT_EQ(d.turns_low, 4);
  EXPECT_EQ(d.turns_high, 4);
  EXPECT_EQ(d.user_tokens.mean, 64);
  EXPECT_DOUBLE_EQ(d.think_time_s, 0);
  EXPECT_EQ(d.think_time, "fixed");
  EXPECT_EQ(d.max_context_tokens, 0);
  EXPECT_EQ(p.normalized["workload"]["conversation"]["turns"], 4);
  EXPECT_FALSE(p.normalized["workload"]["conversation"].contains("max_context_tokens"));
  EXPECT_FALSE(conv_parse(conv_minimal()).plan->workload.conversation);
}

TEST(PlanConversation, BadValuesAreReportedAtTheirPath) {
  json j = conv_minimal();
  j["workload"] = {{"conversation",
                    {{"turns", {{"low", 5}, {"high", 3}}},
                     {"user_tokens", 0},
                     {"think_time_s", -1},
                     {"think_time", "gamma"},
                     {"max_context_tokens", 1},
                     {"bogus", true}}}};
  auto p = conv_parse(j);
  EXPECT_FALSE(p.plan);
  EXPECT_ERROR(p, "/workload/conversation/turns/low", "must not exceed high");
  EXPECT_ERROR(p, "/workload/conversation/user_tokens", "between 1 and");
  EXPECT_ERROR(p, "/workload/conversation/think_time_s", "between 0 and");
  EXPECT_ERROR(p, "/workload/conversation/think_time", "");
  EXPECT_ERROR(p, "/workload/conversation/max_context_tokens", "between 2 and");
  EXPECT_ERROR(p, "/workload/conversation/bogus", "unknown key");
  j["workload"]["conversation"] = json::object();
  EXPECT_ERROR(conv_parse(j), "/workload/conversation/turns", "is required");
  j["workload"]["conversation"] = {{"turns", 300}};
  EXPECT_ERROR(conv_parse(j), "/workload/conversation/turns", "between 1 and 256");
  j["workload"]["conversation"] = {{"turns", {{"low", 2}}}};
  EXPECT_ERROR(conv_parse(j), "/workload/conversation/turns/high", "is required");
  j["workload"]["conversation"] = 3;
  EXPECT_FALSE(conv_parse(j).plan);
}

TEST(PlanConversation, NotWithRequestSetsRequestCountStepsOrTraceReplay) {
  json j = conv_minimal();
  j["workload"] = {{"conversation", {{"turns", 3}}}, {"dataset", {{"path", "x.jsonl"}}}};
  EXPECT_ERROR(conv_parse(j), "/workload/conversation", "synthetic prompts only");
  j = conv_minimal();
  j["workload"] = {{"conversation", {{"turns", 3}}}};
  j["phases"] = json::parse(R"([{"kind": "concurrency_sweep", "levels": [1, 2], "requests": 50}])");
  EXPECT_ERROR(conv_parse(j), "/phases/0/requests", "does not apply to workload.conversation");
  // Also when only a target's workload override holds the conversation.
  j = conv_minimal();
  j["targets"][0]["workload"] = {{"conversation", {{"turns", 3}}}};
  j["phases"] = json::parse(R"([{"kind": "concurrency_sweep", "levels": [1], "requests": 50}])");
  EXPECT_ERROR(conv_parse(j), "/phases/0/requests", "does not apply to workload.conversation");
  // Nor over agents (the shards' sessions are not merged yet).
  j = conv_minimal();
  j["workload"] = {{"conversation", {{"turns", 3}}}};
  j["agents"] = {{"count", 2}, {"launch", "manual"}};
  EXPECT_ERROR(conv_parse(j), "/workload/conversation", "cannot be split over agents");
}

// The unity build compiles this file together with others of tests/unit/api.
#undef EXPECT_ERROR

}  // namespace
}  // namespace llmcap::api
