// PlanExecutor running an at_demand phase (issue 21) with a scripted StepBackend: every target
// gets one open-loop step at the same rate with the same seed (so the same arrivals and prompts),
// judged with the plan's SLA as confirming evidence, and the results' at_demand puts the targets
// side by side.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stop_token>
#include <vector>

#include "api/plan_reader.h"
#include "server/engine/embedded_sims.h"
#include "server/engine/plan_conversion.h"
#include "server/engine/plan_executor.h"

namespace llmcap::server {
namespace {

using nlohmann::json;
constexpr std::int64_t kNsPerMs = 1'000'000;

// Records every spec; answers with one request per arrival of a constant schedule at the spec's
// rate, with a TTFT per call: the first target's steps are slow (TTFT 1500 ms, over the SLA),
// the second's fast (300 ms).
class ScriptedBackend final : public StepBackend {
 public:
  BackendStep run(const agent::StepSpec& spec, std::int64_t /*global_step*/,
                  std::stop_token /*stop*/, const agent::ProgressCallback& /*progress*/) override {
    specs.push_back(spec);
    const std::int64_t ttft = (specs.size() == 1 ? 1500 : 300) * kNsPerMs;
    agent::StepResult r;
    r.completed = true;
    r.model = "llama-3.1-8b";
    const double rate = spec.load.rate.rate_at(0);
    const double total_s = spec.warmup_s + spec.duration_s;
    r.window_start_ns = static_cast<std::int64_t>(spec.warmup_s * 1e9);
    r.window_end_ns = static_cast<std::int64_t>(total_s * 1e9);
    r.end_ns = r.window_end_ns + 3'000 * kNsPerMs;
    const std::int64_t itl = 20 * kNsPerMs;
    std::uint64_t i = 0;
    for (double t = 0; t < total_s; t += 1.0 / rate, ++i) {
      analysis::RequestSample x;
      x.index = i;
      x.t_intended_ns = static_cast<std::int64_t>(t * 1e9);
      x.t_send_ns = x.t_intended_ns;
      x.t_headers_ns = x.t_send_ns + kNsPerMs;
      x.t_first_token_ns = x.t_send_ns + ttft;
      x.t_last_token_ns = x.t_first_token_ns + 31 * itl;
      x.t_end_ns = x.t_last_token_ns;
      x.token_events = 32;
      x.input_tokens = 256;
      x.output_tokens = 32;
      x.planned_input_tokens = 256;
      x.planned_output_tokens = 32;
      x.max_itl_ns = itl;
      x.http_status = 200;
      x.finish_reason = analysis::FinishReason::kLength;
      for (int k = 0; k < 31; ++k) r.itl_ns.record(static_cast<double>(itl));
      r.samples.push_back(x);
      r.response_ids.emplace_back();
    }
    for (std::int64_t t = 0; t < r.window_end_ns; t += 500 * kNsPerMs)
      r.in_flight_series.emplace_back(t, 5);
    r.client_cpu_utilisation = 0.1;
    r.counts.intended = r.counts.sent = r.counts.ok = r.samples.size();
    return BackendStep{r, nullptr, std::nullopt};
  }
  std::vector<agent::StepSpec> specs;
};

RunPlan at_demand_plan() {
  const json plan = json::parse(R"({
    "version": 1, "name": "equal-load", "seed": 7,
    "targets": [{"name": "slow", "base_url": "sim://rtx4090-48g/llama-3.1-8b"},
                {"name": "fast", "base_url": "sim://a100-80g-pcie/llama-3.1-8b"}],
    "workload": {"input_tokens": 256, "output_tokens": 32},
    "sla": {"ttft_ms": {"p95": 1000}, "min_requests": 10},
    "phases": [{"kind": "at_demand", "with_headroom": true, "duration_s": 20, "warmup_s": 2,
                "arrival": "gamma", "burstiness": 0.5}],
    "demand": {"requests_per_minute": 120, "headroom": 0.5}
  })");
  const auto parse = api::parse_plan(plan.dump());
  EXPECT_TRUE(parse.errors.empty()) << parse.errors.front().path << parse.errors.front().message;
  RunPlan out;
  EXPECT_EQ(to_run_plan(parse, out), "");
  return out;
}

TEST(AtDemandExecutor, EveryTargetGetsTheSameScheduleAtTheDemand) {
  EmbeddedSimulators sims;
  ExecutionSink sink;
  ScriptedBackend backend;
  PlanExecutor executor(sims, sink, &backend);
  const RunPlan plan = at_demand_plan();
  EXPECT_EQ(PlanExecutor::planned_steps(plan), 2);
  const ExecutionResult out = executor.run(plan, std::stop_source().get_token());
  ASSERT_EQ(out.error, "");
  ASSERT_EQ(backend.specs.size(), 2u);
  // 2 rps × 1.5 (headroom), open loop, the phase's arrival settings, the same seed.
  for (const auto& spec : backend.specs) {
    EXPECT_EQ(spec.load.kind, agent::LoadKind::kOpen);
    EXPECT_DOUBLE_EQ(spec.load.rate.rate_at(5), 3.0);
    EXPECT_EQ(spec.load.inter_arrival, agent::InterArrival::kGamma);
    EXPECT_DOUBLE_EQ(spec.load.burstiness, 0.5);
    EXPECT_DOUBLE_EQ(spec.duration_s, 20);
    EXPECT_DOUBLE_EQ(spec.warmup_s, 2);
  }
  EXPECT_EQ(backend.specs[0].seed, backend.specs[1].seed);

  // Judged with the SLA: the slow target misses TTFT, the fast one passes; the step is
  // confirming evidence (role soak), so the fast target qualifies at the demand's rate.
  const json& targets = out.results.at("targets");
  const json& slow_step = targets[0]["phases"][0]["steps"][0];
  EXPECT_EQ(slow_step["verdict"]["outcome"], "fail");
  EXPECT_EQ(slow_step["role"], "soak");
  EXPECT_EQ(slow_step["phase_kind"], "at_demand");
  EXPECT_EQ(targets[0]["verdict"]["outcome"], "fail");
  EXPECT_EQ(targets[1]["verdict"]["outcome"], "pass");
  EXPECT_DOUBLE_EQ(targets[1]["qualified"]["offered_rate_rps"].get<double>(), 3.0);
  EXPECT_EQ(out.verdict, analysis::Outcome::kFail);
  const json& info = targets[0]["phases"][0]["at_demand"];
  EXPECT_EQ(info["source"], "demand");
  EXPECT_DOUBLE_EQ(info["demand_rps"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(info["headroom"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(info["offered_output_tokens_per_s"].get<double>(), 3.0 * 32);
  EXPECT_GT(info["kv_pool_gib"].get<double>(), 10);  // the 4090 48GB's pool, from the memory fit

  // The comparison, side by side.
  const json& c = out.results.at("at_demand");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_DOUBLE_EQ(c[0]["offered_rate_rps"].get<double>(), 3.0);
  ASSERT_EQ(c[0]["targets"].size(), 2u);
  EXPECT_EQ(c[0]["targets"][0]["target"], "slow");
  EXPECT_EQ(c[0]["targets"][0]["outcome"], "fail");
  EXPECT_EQ(c[0]["targets"][0]["missed"], json::array({"ttft_p95"}));
  EXPECT_NEAR(c[0]["targets"][0]["ttft_p95_ms"].get<double>(), 1500, 1);
  EXPECT_EQ(c[0]["targets"][1]["outcome"], "pass");
  EXPECT_NEAR(c[0]["targets"][1]["ttft_p95_ms"].get<double>(), 300, 1);
  EXPECT_NEAR(c[0]["targets"][1]["achieved_rate_rps"].get<double>(), 3.0, 0.01);
  EXPECT_FALSE(c[0]["targets"][1]["predicted"].get<bool>());
  // No capacity_search in the plan: no capacity headroom.
  EXPECT_TRUE(c[0]["targets"][1]["capacity_headroom"].is_null());
}

}  // namespace
}  // namespace llmcap::server
