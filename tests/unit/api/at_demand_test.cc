// The equal-load comparison (issue 21): the at_demand phase's keys and the rate parse_plan()
// resolves from the demand or an override (errors naming the field), and the comparison table
// built from a results document (api/at_demand.h) with its Markdown and HTML renderings.
#include "api/at_demand.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "api/plan_reader.h"
#include "api/report_html.h"
#include "api/report_tables.h"

namespace llmcap::api {
namespace {

using nlohmann::json;

json plan_with(json phase, json demand = nullptr) {
  json j = json::parse(R"({
    "version": 1,
    "targets": [{"name": "a", "base_url": "sim://rtx4090-48g/llama-3.1-8b"},
                {"name": "b", "base_url": "sim://a100-80g-pcie/llama-3.1-8b"}],
    "workload": {"input_tokens": 512, "output_tokens": 200},
    "sla": {"ttft_ms": {"p95": 1000}}
  })");
  j["phases"] = json::array({std::move(phase)});
  if (!demand.is_null()) j["demand"] = std::move(demand);
  return j;
}

PlanParse parse(const json& plan, const PlanLimits& limits = {}) {
  return parse_plan(plan.dump(), limits);
}

std::string describe(const PlanParse& p) {
  std::string s;
  for (const auto& e : p.errors) s += "  " + e.path + ": " + e.message + "\n";
  return s;
}

bool has_error(const PlanParse& p, const std::string& path, const std::string& text) {
  return std::any_of(p.errors.begin(), p.errors.end(), [&](const FieldError& e) {
    return e.path == path && e.message.find(text) != std::string::npos;
  });
}

#define EXPECT_ERROR(parse_result, path, text)                                        \
  EXPECT_TRUE(has_error(parse_result, path, text))                                    \
      << "expected error at '" << (path) << "' containing '" << (text) << "', got:\n" \
      << describe(parse_result)

const json kDemand = {{"requests_per_minute", 90}, {"headroom", 0.3}};

TEST(AtDemandPlan, OffersTheDemandAndItsHeadroom) {
  auto p =
      parse(plan_with({{"kind", "at_demand"}, {"duration_s", 120}, {"warmup_s", 10}}, kDemand));
  ASSERT_TRUE(p.plan) << describe(p);
  const PlanPhase& phase = p.plan->phases[0];
  EXPECT_EQ(phase.kind, PhaseKind::kAtDemand);
  EXPECT_EQ(phase.name, "at_demand");
  EXPECT_DOUBLE_EQ(phase.at_demand.rate_rps, 1.5);  // 90 / 60
  EXPECT_EQ(phase.at_demand.source, "demand");
  EXPECT_DOUBLE_EQ(phase.at_demand.demand_rps, 1.5);
  EXPECT_DOUBLE_EQ(phase.at_demand.headroom, 0);
  EXPECT_DOUBLE_EQ(phase.at_demand.mean_output_tokens, 200);  // the workload's, as the demand's
  EXPECT_EQ(phase.arrival, Arrival::kPoisson);
  // Each target runs one step of warm-up + window + drain (one guessed request: 200 tokens ×
  // 50 ms + 0.5 s).
  EXPECT_DOUBLE_EQ(p.estimated_duration_s, 2 * (130 + 10.5));

  p = parse(plan_with({{"kind", "at_demand"}, {"with_headroom", true}, {"arrival", "constant"}},
                      kDemand));
  ASSERT_TRUE(p.plan) << describe(p);
  EXPECT_DOUBLE_EQ(p.plan->phases[0].at_demand.rate_rps, 1.5 * 1.3);
  EXPECT_DOUBLE_EQ(p.plan->phases[0].at_demand.headroom, 0.3);
  EXPECT_EQ(p.plan->phases[0].arrival, Arrival::kConstant);
  // The normalised plan keeps the phase's keys and resolves to the same rate again.
  const json& n = p.normalized["phases"][0];
  EXPECT_EQ(n["kind"], "at_demand");
  EXPECT_EQ(n["with_headroom"], true);
  EXPECT_FALSE(n.contains("rate_rps"));
  const auto again = parse(p.normalized);
  ASSERT_TRUE(again.plan) << describe(again);
  EXPECT_DOUBLE_EQ(again.plan->phases[0].at_demand.rate_rps, 1.5 * 1.3);
  EXPECT_EQ(again.fingerprint, p.fingerprint);
}

TEST(AtDemandPlan, OverridesGiveTheRate) {
  auto p = parse(plan_with({{"kind", "at_demand"}, {"rate_rps", 2.5}}));
  ASSERT_TRUE(p.plan) << describe(p);
  EXPECT_DOUBLE_EQ(p.plan->phases[0].at_demand.rate_rps, 2.5);
  EXPECT_EQ(p.plan->phases[0].at_demand.source, "rate_rps");
  EXPECT_DOUBLE_EQ(p.plan->phases[0].at_demand.demand_rps, 0);
  EXPECT_EQ(p.normalized["phases"][0]["rate_rps"], 2.5);

  // Output tokens/s over the demand's mean output length (given: 240), with its headroom.
  json demand = kDemand;
  demand["mean_output_tokens"] = 240;
  p = parse(plan_with(
      {{"kind", "at_demand"}, {"output_tokens_per_s", 480}, {"with_headroom", true}}, demand));
  ASSERT_TRUE(p.plan) << describe(p);
  EXPECT_DOUBLE_EQ(p.plan->phases[0].at_demand.rate_rps, 2.0 * 1.3);
  EXPECT_EQ(p.plan->phases[0].at_demand.source, "output_tokens_per_s");
  EXPECT_DOUBLE_EQ(p.plan->phases[0].at_demand.demand_rps, 1.5);
  EXPECT_DOUBLE_EQ(p.plan->phases[0].at_demand.mean_output_tokens, 240);
  // Without a demand: the workload's output mean (200).
  p = parse(plan_with({{"kind", "at_demand"}, {"output_tokens_per_s", 500}}));
  ASSERT_TRUE(p.plan) << describe(p);
  EXPECT_DOUBLE_EQ(p.plan->phases[0].at_demand.rate_rps, 2.5);

  // Request-count window: requests / rate, and the drain.
  p = parse(plan_with({{"kind", "at_demand"}, {"requests", 300}}, kDemand));
  ASSERT_TRUE(p.plan) << describe(p);
  EXPECT_EQ(p.plan->phases[0].requests, 300);
  EXPECT_DOUBLE_EQ(p.estimated_duration_s, 2 * (5 + 200 + 10.5));
}

TEST(AtDemandPlan, ErrorsNameTheField) {
  // Nothing to offer: the phase itself.
  auto p = parse(plan_with({{"kind", "at_demand"}}));
  EXPECT_ERROR(p, "/phases/0", "demand.requests_per_minute");
  EXPECT_ERROR(p, "/phases/0", "rate_rps or output_tokens_per_s");
  p = parse(
      plan_with({{"kind", "at_demand"}, {"rate_rps", 1}, {"output_tokens_per_s", 100}}, kDemand));
  EXPECT_ERROR(p, "/phases/0/output_tokens_per_s", "not both");
  p = parse(plan_with({{"kind", "at_demand"}, {"rate_rps", 1}, {"with_headroom", true}}));
  EXPECT_ERROR(p, "/phases/0/with_headroom", "demand");
  p = parse(plan_with({{"kind", "at_demand"}, {"with_headroom", "yes"}}, kDemand));
  EXPECT_ERROR(p, "/phases/0/with_headroom", "true or false");
  p = parse(plan_with({{"kind", "at_demand"}, {"rate_rps", 0}}));
  EXPECT_ERROR(p, "/phases/0/rate_rps", "between");
  p = parse(plan_with({{"kind", "at_demand"}, {"rate_rps", "qualified"}}));
  EXPECT_ERROR(p, "/phases/0/rate_rps", "must be a number");
  p = parse(plan_with({{"kind", "at_demand"}, {"rates_rps", {1}}}, kDemand));
  EXPECT_ERROR(p, "/phases/0/rates_rps", "unknown key");
  p = parse(plan_with({{"kind", "at_demand"}, {"duration_s", 10}, {"requests", 10}}, kDemand));
  EXPECT_ERROR(p, "/phases/0/requests", "not both");
  // 600 requests at 1.5 rps take 400 s.
  p = parse(
      plan_with({{"kind", "at_demand"}, {"requests", 600}, {"max_duration_s", 300}}, kDemand));
  EXPECT_ERROR(p, "/phases/0/requests", "max_duration_s");
  // Above the daemon's rate limit.
  PlanLimits limits;
  limits.max_rate_rps = 1;
  p = parse(plan_with({{"kind", "at_demand"}}, kDemand), limits);
  EXPECT_ERROR(p, "/phases/0", "rate limit");
  p = parse(plan_with({{"kind", "at_demand"}, {"with_headroom", true}},
                      {{"requests_per_minute", 55}, {"headroom", 0.3}}),
            limits);
  EXPECT_ERROR(p, "/phases/0", "rate limit");
  // A dataset's output lengths are known only once it runs: output_tokens_per_s needs the
  // demand's mean.
  json j = plan_with({{"kind", "at_demand"}, {"output_tokens_per_s", 100}},
                     {{"requests_per_minute", 60}});
  j["workload"] = {{"dataset", {{"path", "requests.jsonl"}}}};
  p = parse(j);
  EXPECT_ERROR(p, "/phases/0/output_tokens_per_s", "demand.mean_output_tokens");
  j["demand"]["mean_output_tokens"] = 50;
  p = parse(j);
  ASSERT_TRUE(p.plan) << describe(p);
  EXPECT_DOUBLE_EQ(p.plan->phases[0].at_demand.rate_rps, 2);
}

TEST(AtDemandPlan, RefusedWithoutAnSlaBoundOrWithConversations) {
  // Judged like a soak: without a bound a pass would qualify the demand on load rules alone.
  json j = plan_with({{"kind", "at_demand"}}, kDemand);
  j.erase("sla");
  auto p = parse(j);
  EXPECT_ERROR(p, "/phases/0/kind", "needs an sla with at least one bound");
  // A conversation's open-loop rate starts sessions of several turns: neither the phase nor a
  // demand (in requests) applies.
  j = plan_with({{"kind", "at_demand"}, {"rate_rps", 1}});
  j["workload"]["conversation"] = {{"turns", 3}};
  p = parse(j);
  EXPECT_ERROR(p, "/phases/0/kind", "at_demand does not apply to workload.conversation");
  j = plan_with({{"kind", "concurrency_sweep"}, {"levels", {2}}}, kDemand);
  j["workload"]["conversation"] = {{"turns", 3}};
  p = parse(j);
  EXPECT_ERROR(p, "/demand", "not with workload.conversation");
}

TEST(AtDemandPlan, AMatrixOffersEachWorkloadTheSameOutputRate) {
  // 400 output tok/s: 2 rps to a 200-token workload, 8 rps to a 50-token one; each checked
  // against the rate limit by name.
  json j = plan_with({{"kind", "at_demand"}, {"output_tokens_per_s", 400}});
  j["workloads"] = {{{"name", "long-out"}}, {{"name", "short-out"}, {"output_tokens", 50}}};
  auto p = parse(j);
  ASSERT_TRUE(p.plan) << describe(p);
  EXPECT_EQ(p.plan->phases[0].at_demand.source, "output_tokens_per_s");
  PlanLimits limits;
  limits.max_rate_rps = 5;
  p = parse(j, limits);
  EXPECT_ERROR(p, "/phases/0/output_tokens_per_s", "offers 8 rps to workload short-out");
}

// A target's document with an at_demand phase (and, optionally, a capacity search).
json target_doc(const std::string& name, const std::string& outcome, double ttft_p95_ms,
                json telemetry, std::optional<double> searched_rps) {
  json reasons = json::array();
  if (outcome == "fail")
    reasons.push_back({{"check", "server_latency"}, {"status", "missed"}, {"code", "tpot_p95"}});
  json step{{"global_step", 3},
            {"label", "at_demand 1.95 rps"},
            {"partial", false},
            {"client_bound", false},
            {"stats",
             {{"offered_rate_rps", 1.95},
              {"achieved_rate_rps", 1.94},
              {"requests_per_s", 1.9},
              {"output_tokens_per_s", 480.5},
              {"error_rate", 0.0},
              {"ttft_ms", {{"p50", ttft_p95_ms / 2}, {"p95", ttft_p95_ms}}},
              {"tpot_ms", {{"p95", 30.5}}},
              {"e2e_ms", {{"p95", 8000}}}}},
            {"verdict", {{"outcome", outcome}, {"reasons", reasons}}}};
  if (!telemetry.is_null()) step["telemetry"] = telemetry;
  json phases = json::array();
  phases.push_back({{"kind", "at_demand"},
                    {"name", "at-demand"},
                    {"repeat", 0},
                    {"steps", {step}},
                    {"at_demand",
                     {{"offered_rate_rps", 1.95},
                      {"source", "demand"},
                      {"demand_rps", 1.5},
                      {"with_headroom", true},
                      {"headroom", 0.3},
                      {"mean_output_tokens", 256},
                      {"offered_output_tokens_per_s", 499.2},
                      {"kv_pool_gib", name == "fast" ? json(50.0) : json(nullptr)}}}});
  json qualified = nullptr;
  if (searched_rps) {
    phases.push_back({{"kind", "capacity_search"},
                      {"name", "capacity_search"},
                      {"repeat", 0},
                      {"steps", json::array()},
                      {"search", {{"qualified_rate_rps", *searched_rps}}}});
    qualified = {{"basis", "open_loop"}, {"offered_rate_rps", *searched_rps}};
  }
  return json{{"name", name},
              {"predicted", true},
              {"simulated", true},
              {"phases", phases},
              {"qualified", qualified}};
}

json two_target_results() {
  json results{{"plan", "p"}, {"predicted", true}, {"state", "succeeded"}};
  results["targets"] =
      json::array({target_doc("slow", "fail", 420, {{"kv_usage_max", 0.2}}, std::nullopt),
                   target_doc("fast", "pass", 150, {{"kv_usage_max", 0.05}}, 4.5)});
  results["at_demand"] = at_demand_comparison(results);
  return results;
}

TEST(AtDemandComparison, OneRowPerTargetAtTheSameLoad) {
  const json results = two_target_results();
  const json& c = results["at_demand"];
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["phase"], "at-demand");
  EXPECT_EQ(c[0]["offered_rate_rps"], 1.95);
  EXPECT_EQ(c[0]["demand_rps"], 1.5);
  ASSERT_EQ(c[0]["targets"].size(), 2u);
  const json& slow = c[0]["targets"][0];
  const json& fast = c[0]["targets"][1];
  EXPECT_EQ(slow["target"], "slow");
  EXPECT_EQ(slow["outcome"], "fail");
  EXPECT_EQ(slow["missed"], json::array({"tpot_p95"}));
  EXPECT_EQ(slow["ttft_p95_ms"], 420);
  EXPECT_EQ(slow["achieved_rate_rps"], 1.94);
  EXPECT_EQ(slow["kv_cache_usage_max"], 0.2);
  // No pool size (a real target's): no memory headroom, never a guess. No search: no headroom.
  EXPECT_TRUE(slow["memory_headroom_gib"].is_null());
  EXPECT_TRUE(slow["capacity_headroom"].is_null());
  EXPECT_TRUE(slow["qualified_rate_rps"].is_null());
  EXPECT_EQ(fast["outcome"], "pass");
  EXPECT_DOUBLE_EQ(fast["memory_headroom_gib"].get<double>(), 0.95 * 50);
  EXPECT_DOUBLE_EQ(fast["qualified_rate_rps"].get<double>(), 4.5);
  EXPECT_DOUBLE_EQ(fast["capacity_headroom"].get<double>(), 3.0);  // 4.5 / demand 1.5
  EXPECT_EQ(fast["predicted"], true);

  // Without telemetry the KV figures are unknown.
  json bare = results;
  bare["targets"][1]["phases"][0]["steps"][0].erase("telemetry");
  const json row = at_demand_comparison(bare)[0]["targets"][1];
  EXPECT_TRUE(row["kv_cache_usage_max"].is_null());
  EXPECT_TRUE(row["memory_headroom_gib"].is_null());
  // A qualified rate without a capacity search (the at_demand pass itself) is no headroom.
  bare["targets"][0]["qualified"] = {{"basis", "open_loop"}, {"offered_rate_rps", 1.95}};
  EXPECT_TRUE(at_demand_comparison(bare)[0]["targets"][0]["capacity_headroom"].is_null());
  // A workload matrix repeats every target per workload: one table per workload.
  json matrix = results;
  matrix["targets"] = json::array();
  for (const char* w : {"chat", "rag"}) {
    for (json t : results["targets"]) {
      t["workload_name"] = w;
      matrix["targets"].push_back(t);
    }
  }
  const json by_workload = at_demand_comparison(matrix);
  ASSERT_EQ(by_workload.size(), 2u);
  EXPECT_EQ(by_workload[0]["workload"], "chat");
  EXPECT_EQ(by_workload[1]["workload"], "rag");
  EXPECT_EQ(by_workload[1]["targets"].size(), 2u);
  EXPECT_TRUE(c[0]["workload"].is_null());
  matrix["at_demand"] = by_workload;
  EXPECT_EQ(at_demand_title(at_demand_tables(matrix)[1]), "at-demand, workload rag");
  // No at_demand phase: an empty comparison; malformed documents do not throw.
  EXPECT_EQ(at_demand_comparison(json{{"targets", json::array()}}), json::array());
  EXPECT_EQ(at_demand_comparison(json::array()), json::array());
  EXPECT_TRUE(at_demand_tables(json{{"at_demand", 3}}).empty());
}

TEST(AtDemandComparison, TablesAndRenderings) {
  const json results = two_target_results();
  const auto tables = at_demand_tables(results);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(at_demand_load_text(tables[0]),
            "1.95 rps = demand 1.50 rps × 1.30 (headroom), 499 output tok/s");
  ASSERT_EQ(tables[0].rows.size(), 2u);
  EXPECT_EQ(at_demand_verdict_text(tables[0].rows[0]), "FAIL (tpot_p95) predicted");
  EXPECT_EQ(at_demand_verdict_text(tables[0].rows[1]), "PASS predicted");
  // A step cut short neither passes nor fails the comparison.
  json cut = results;
  cut["at_demand"][0]["targets"][1]["partial"] = true;
  EXPECT_EQ(at_demand_verdict_text(at_demand_tables(cut)[0].rows[1]),
            "INCONCLUSIVE (partial) predicted");
  // A per-target optimised plan shares the arrival times, not the prompts.
  EXPECT_EQ(at_demand_equal_text(tables[0]), ", the same arrivals and prompts on each");
  cut["comparison_label"] = "per-target optimised";
  EXPECT_NE(at_demand_equal_text(at_demand_tables(cut)[0]).find("prompts and lengths may differ"),
            std::string::npos);

  const std::string md = render_markdown(results);
  EXPECT_NE(md.find("## At equal load: at-demand"), std::string::npos) << md;
  EXPECT_NE(md.find("| slow | 1.95 | 1.94 | 480.5 | 420 | 30.5 | 8000 | 0.00% | 20% | - | FAIL "
                    "(tpot_p95) predicted | - |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| fast | 1.95 | 1.94 | 480.5 | 150 | 30.5 | 8000 | 0.00% | 5% | 47.5 | PASS "
                    "predicted | ×3.00 |"),
            std::string::npos)
      << md;

  const std::string html = render_report_html(results);
  EXPECT_NE(html.find("<section id=\"at-demand\">"), std::string::npos);
  EXPECT_NE(html.find("data-phase=\"at-demand\""), std::string::npos);
  EXPECT_NE(html.find("<tr data-target=\"fast\"><td class=\"text\">fast</td><td>1.95</td>"),
            std::string::npos);
  // No comparison, no section.
  json none = results;
  none.erase("at_demand");
  EXPECT_EQ(render_markdown(none).find("At equal load"), std::string::npos);
  EXPECT_EQ(render_report_html(none).find("id=\"at-demand\""), std::string::npos);
}

// The unity build compiles this file together with others of tests/unit/api.
#undef EXPECT_ERROR

}  // namespace
}  // namespace llmcap::api
