// PlanExecutor with a scripted StepBackend: how a cancelled step is judged and recorded.
// A stop that lands before the step's measurement window opened (model discovery, calibration,
// warm-up) must end the job cancelled with no step, never throw (it once did: the empty
// window reached compute_step_stats, and the job stayed "running" forever).
#include "server/plan_executor.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stop_token>
#include <vector>

#include "api/plan_reader.h"
#include "server/embedded_sims.h"
#include "server/plan_conversion.h"

namespace llmcap::server {
namespace {

using nlohmann::json;
constexpr std::int64_t kNsPerMs = 1'000'000;

RunPlan one_step_plan() {
  const json plan{{"version", 1},
                  {"name", "cancel"},
                  {"targets", json::array({json{{"name", "a100"},
                                                {"base_url", "sim://a100-80g-pcie/llama-3.1-8b"},
                                                {"price_per_hour", 1.5}}})},
                  {"workload", json{{"input_tokens", json{{"fixed", 256}}},
                                    {"output_tokens", json{{"fixed", 32}}}}},
                  {"sla", json{{"ttft_ms", json{{"p95", 5000}}}, {"min_requests", 1}}},
                  {"phases", json::array({json{{"kind", "concurrency_sweep"},
                                               {"levels", json::array({1, 2})},
                                               {"duration_s", 60},
                                               {"warmup_s", 1}}})}};
  const auto parse = api::parse_plan(plan.dump());
  EXPECT_TRUE(parse.errors.empty()) << parse.errors.front().path;
  RunPlan out;
  EXPECT_EQ(to_run_plan(parse, out), "");
  return out;
}

// Returns `result` for the first step and requests the job's stop while doing so, as a cancel
// that arrives during that step would.
class CancellingBackend final : public StepBackend {
 public:
  CancellingBackend(std::stop_source& stop, agent::StepResult result)
      : stop_(stop), result_(std::move(result)) {}
  BackendStep run(const agent::StepSpec& /*spec*/, std::int64_t /*global_step*/,
                  std::stop_token stop, const agent::ProgressCallback& /*progress*/) override {
    ++calls;
    stop_.request_stop();
    EXPECT_TRUE(stop.stop_requested());
    return BackendStep{result_, nullptr};
  }
  int calls = 0;

 private:
  std::stop_source& stop_;
  agent::StepResult result_;
};

class RecordingSink final : public ExecutionSink {
 public:
  bool on_step_finished(const StepContext& /*ctx*/, const agent::StepResult& /*result*/,
                        const std::vector<agent::TelemetryPoint>& /*telemetry*/,
                        const json& step_json, std::string& /*error*/) override {
    steps.push_back(step_json);
    return true;
  }
  std::vector<json> steps;
};

agent::StepResult cancelled_result(std::int64_t window_start_ns, std::int64_t window_end_ns) {
  agent::StepResult r;
  r.cancelled = true;
  r.model = "llama-3.1-8b";
  r.window_start_ns = window_start_ns;
  r.window_end_ns = window_end_ns;
  return r;
}

TEST(PlanExecutor, CancelBeforeTheWindowOpenedEndsCancelledWithNoStep) {
  for (const auto& [start, end] : {std::pair<std::int64_t, std::int64_t>{0, 0},  // calibrating
                                   {1000 * kNsPerMs, 1000 * kNsPerMs}}) {        // warming up
    EmbeddedSimulators sims;
    RecordingSink sink;
    std::stop_source stop;
    CancellingBackend backend(stop, cancelled_result(start, end));
    PlanExecutor executor(sims, sink, &backend);
    ExecutionResult out;
    ASSERT_NO_THROW(out = executor.run(one_step_plan(), stop.get_token()));
    EXPECT_TRUE(out.cancelled);
    EXPECT_EQ(out.error, "");
    EXPECT_EQ(out.results.value("state", ""), "cancelled");
    EXPECT_EQ(backend.calls, 1);  // the second level never starts
    EXPECT_TRUE(sink.steps.empty());
    EXPECT_FALSE(out.all_qualified);
  }
}

TEST(PlanExecutor, CancelInsideTheWindowRecordsAPartialStepOverTheTimeThatRan) {
  EmbeddedSimulators sims;
  RecordingSink sink;
  std::stop_source stop;
  // Warm-up 1 s, then stopped 2.5 s into a 60 s window (StepRunner cuts the window there).
  CancellingBackend backend(stop, cancelled_result(1000 * kNsPerMs, 3500 * kNsPerMs));
  PlanExecutor executor(sims, sink, &backend);
  const ExecutionResult out = executor.run(one_step_plan(), stop.get_token());
  EXPECT_TRUE(out.cancelled);
  EXPECT_EQ(out.error, "");
  ASSERT_EQ(sink.steps.size(), 1u);
  const json& step = sink.steps.front();
  EXPECT_TRUE(step.at("partial").get<bool>());
  EXPECT_DOUBLE_EQ(step.at("stats").at("window_s").get<double>(), 2.5);
  EXPECT_EQ(step.at("verdict").at("outcome"), "inconclusive") << step.at("verdict").dump();
}

}  // namespace
}  // namespace llmcap::server
