// PlanExecutor with a scripted StepBackend: how a cancelled step is judged and recorded.
// A stop that lands before the step's measurement window opened (model discovery, calibration,
// warm-up) must end the job cancelled with no step, never throw (it once did: the empty
// window reached compute_step_stats, and the job stayed "running" forever).
#include "server/engine/plan_executor.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stop_token>
#include <vector>

#include "api/plan_reader.h"
#include "server/engine/embedded_sims.h"
#include "server/engine/plan_conversion.h"

namespace llmcap::server {
namespace {

using nlohmann::json;
constexpr std::int64_t kExecutorNsPerMs = 1'000'000;

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
    return BackendStep{result_, nullptr, std::nullopt};
  }
  int calls = 0;

 private:
  std::stop_source& stop_;
  agent::StepResult result_;
};

class RecordingSink final : public ExecutionSink {
 public:
  bool on_step_finished(const StepContext& /*ctx*/, const StepOutcome& step,
                        std::string& /*error*/) override {
    // The typed outcome and the document say the same.
    EXPECT_EQ(step.document["verdict"]["outcome"],
              std::string(analysis::to_string(step.verdict.outcome)));
    EXPECT_EQ(step.document["partial"], step.partial());
    steps.push_back(step.document);
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
  for (const auto& [start, end] :
       {std::pair<std::int64_t, std::int64_t>{0, 0},            // calibrating
        {1000 * kExecutorNsPerMs, 1000 * kExecutorNsPerMs}}) {  // warming up
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
  CancellingBackend backend(stop,
                            cancelled_result(1000 * kExecutorNsPerMs, 3500 * kExecutorNsPerMs));
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

// Returns `result` for every step, never stopping the job (agents' merged uploads).
class FixedResultBackend final : public StepBackend {
 public:
  explicit FixedResultBackend(agent::StepResult result) : result_(std::move(result)) {}
  BackendStep run(const agent::StepSpec& /*spec*/, std::int64_t /*global_step*/,
                  std::stop_token /*stop*/, const agent::ProgressCallback& /*progress*/) override {
    ++calls;
    return BackendStep{result_, nullptr, std::nullopt};
  }
  int calls = 0;

 private:
  agent::StepResult result_;
};

TEST(PlanExecutor, AnEmptyWindowThatWasNotCancelledFailsTheJobSayingSo) {
  // Issue 35 #6: shard uploads whose windows end where they start are accepted (a shard with
  // nothing to send), and all of them merge into an empty window; judging it threw and the job
  // ended "internal error in llmcapd" (tests/fuzz/shard_upload_fuzz.cc found it). Now the job
  // fails naming the empty window, without an exception and without a step.
  for (const auto& [start, end] : {std::pair<std::int64_t, std::int64_t>{0, 0},
                                   {1000 * kExecutorNsPerMs, 1000 * kExecutorNsPerMs}}) {
    EmbeddedSimulators sims;
    RecordingSink sink;
    agent::StepResult r;
    r.model = "llama-3.1-8b";
    r.window_start_ns = start;
    r.window_end_ns = end;
    FixedResultBackend backend(r);
    PlanExecutor executor(sims, sink, &backend);
    std::stop_source stop;
    ExecutionResult out;
    ASSERT_NO_THROW(out = executor.run(one_step_plan(), stop.get_token()));
    EXPECT_FALSE(out.cancelled);
    EXPECT_NE(out.error.find("measurement window is empty"), std::string::npos) << out.error;
    EXPECT_EQ(backend.calls, 1);
    EXPECT_TRUE(sink.steps.empty());
  }
}

// A target whose true capacity is known: open-loop steps get one request every 1/rate s over
// warm-up + window, TTFT 200 ms while the rate holds and 2 s above it, 32 tokens 20 ms apart.
// Short steps hold up to short_limit_rps; the longer confirming steps only up to
// confirm_limit_rps (a target that degrades under sustained load, as in the issue).
class KnownCapacityBackend final : public StepBackend {
 public:
  KnownCapacityBackend(double short_limit_rps, double confirm_limit_rps, double short_s)
      : short_limit_(short_limit_rps), confirm_limit_(confirm_limit_rps), short_s_(short_s) {}
  BackendStep run(const agent::StepSpec& spec, std::int64_t /*global_step*/,
                  std::stop_token /*stop*/, const agent::ProgressCallback& /*progress*/) override {
    agent::StepResult r;
    r.completed = true;
    r.model = "llama-3.1-8b";
    const double rate = spec.load.rate.rate_at(0);
    const bool confirm = spec.duration_s > short_s_ * 1.5;
    const bool holds = rate <= (confirm ? confirm_limit_ : short_limit_);
    const double total_s = spec.warmup_s + spec.duration_s;
    r.window_start_ns = static_cast<std::int64_t>(spec.warmup_s * 1e9);
    r.window_end_ns = static_cast<std::int64_t>(total_s * 1e9);
    r.end_ns = r.window_end_ns + 3'000 * kExecutorNsPerMs;
    const std::int64_t ttft = (holds ? 200 : 2000) * kExecutorNsPerMs;
    const std::int64_t itl = 20 * kExecutorNsPerMs;
    std::uint64_t i = 0;
    for (double t = 0; t < total_s; t += 1.0 / rate, ++i) {
      analysis::RequestSample x;
      x.index = i;
      x.t_intended_ns = static_cast<std::int64_t>(t * 1e9);
      x.t_send_ns = x.t_intended_ns;
      x.t_headers_ns = x.t_send_ns + kExecutorNsPerMs;
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
    for (std::int64_t t = 0; t < r.window_end_ns; t += 500 * kExecutorNsPerMs)
      r.in_flight_series.emplace_back(t, 5);
    r.client_cpu_utilisation = 0.1;
    r.counts.intended = r.counts.sent = r.counts.ok = r.samples.size();
    ++calls;
    return BackendStep{r, nullptr, std::nullopt};
  }
  int calls = 0;

 private:
  double short_limit_, confirm_limit_, short_s_;
};

RunPlan search_plan() {
  const json plan{{"version", 1},
                  {"name", "search"},
                  {"targets", json::array({json{{"name", "a100"},
                                                {"base_url", "sim://a100-80g-pcie/llama-3.1-8b"},
                                                {"price_per_hour", 1.5}}})},
                  {"workload", json{{"input_tokens", json{{"fixed", 256}}},
                                    {"output_tokens", json{{"fixed", 32}}}}},
                  {"sla", json{{"ttft_ms", json{{"p95", 1000}}}, {"min_requests", 10}}},
                  {"phases", json::array({json{{"kind", "capacity_search"},
                                               {"low_rps", 1},
                                               {"high_rps", 20},
                                               {"resolution", 0.05},
                                               {"max_steps", 20},
                                               {"duration_s", 4},
                                               {"warmup_s", 1},
                                               {"confirm_duration_s", 12}}})},
                  {"demand", json{{"requests_per_minute", 600}, {"mean_output_tokens", 32}}}};
  const auto parse = api::parse_plan(plan.dump());
  EXPECT_TRUE(parse.errors.empty()) << parse.errors.front().path << parse.errors.front().message;
  RunPlan out;
  EXPECT_EQ(to_run_plan(parse, out), "");
  return out;
}

TEST(PlanExecutor, TheQualifiedRateIsTheHighestRateWhoseConfirmPassed) {
  // Short steps hold to 7.5 rps, confirms only to 7.0: the search confirms ~7.27 (fails), steps
  // down 5 % and confirms ~6.9 (passes). The answer is that rate, never the short-step 7.27.
  EmbeddedSimulators sims;
  RecordingSink sink;
  KnownCapacityBackend backend(7.5, 7.0, 4);
  PlanExecutor executor(sims, sink, &backend);
  const ExecutionResult out = executor.run(search_plan(), std::stop_source().get_token());
  ASSERT_EQ(out.error, "");
  const json& t = out.results.at("targets").at(0);
  ASSERT_TRUE(t.at("qualified").is_object()) << t.dump();
  const double rate = t["qualified"].at("offered_rate_rps").get<double>();
  const double confirmed = t.at("phases").at(0).at("search").at("qualified_rate_rps").get<double>();
  EXPECT_NEAR(rate, confirmed, 1e-4);  // the results round to 4 decimals
  EXPECT_LE(rate, 7.0);
  EXPECT_GT(rate, 6.5);
  EXPECT_TRUE(t["qualified"].at("confirmed").get<bool>());
  EXPECT_GT(t["qualified"].at("achieved_rate_rps").get<double>(), 0);
  EXPECT_EQ(t.at("verdict").at("outcome"), "pass");
  EXPECT_EQ(out.verdict, analysis::Outcome::kPass);
  EXPECT_EQ(out.results.at("verdict").at("outcome"), "pass");
  EXPECT_TRUE(out.all_qualified);
}

TEST(PlanExecutor, ConfirmsThatHoldOnlyLowerAreSearchedWithConfirmLengthSteps) {
  // Short steps hold to 7.5 rps but no confirm holds above 5: after the first failed confirm
  // every step is confirm-length, and the answer is a confirmed rate within 5 % of 5.
  EmbeddedSimulators sims;
  RecordingSink sink;
  KnownCapacityBackend backend(7.5, 5.0, 4);
  PlanExecutor executor(sims, sink, &backend);
  const ExecutionResult out = executor.run(search_plan(), std::stop_source().get_token());
  ASSERT_EQ(out.error, "");
  const json& t = out.results.at("targets").at(0);
  const json& search = t.at("phases").at(0).at("search");
  ASSERT_TRUE(search.at("qualified_rate_rps").is_number()) << search.dump();
  EXPECT_LE(search["qualified_rate_rps"].get<double>(), 5.0);
  EXPECT_GE(search["qualified_rate_rps"].get<double>(), 5.0 / 1.05);
  EXPECT_TRUE(search.at("resolution_reached").get<bool>());
  EXPECT_GT(search.at("bracket_high_rps").get<double>(), 5.0);
  EXPECT_EQ(t.at("verdict").at("outcome"), "pass");
}

TEST(PlanExecutor, EveryConfirmFailedMeansNoCapacityNoPassAndNoCost) {
  // Short steps hold to 7.5 rps but no confirm holds even at the search's lowest rate (1 rps).
  // No rate qualifies; the SLA was not shown to fail everywhere (short steps passed), so the
  // verdict is inconclusive (exit 4), naming the failed confirms — never a PASS, never a cost.
  EmbeddedSimulators sims;
  RecordingSink sink;
  KnownCapacityBackend backend(7.5, 0.5, 4);
  PlanExecutor executor(sims, sink, &backend);
  const ExecutionResult out = executor.run(search_plan(), std::stop_source().get_token());
  ASSERT_EQ(out.error, "");
  const json& t = out.results.at("targets").at(0);
  EXPECT_TRUE(t.at("phases").at(0).at("search").at("qualified_rate_rps").is_null());
  EXPECT_TRUE(t.at("qualified").is_null()) << t.at("qualified").dump();
  EXPECT_EQ(t.at("verdict").at("outcome"), "inconclusive");
  const std::string statement = t["verdict"].at("statement").get<std::string>();
  EXPECT_EQ(statement.rfind("no confirmed rate: ttft_p95 failed at", 0), 0u) << statement;
  EXPECT_NE(statement.find("(confirm)"), std::string::npos) << statement;
  EXPECT_EQ(out.verdict, analysis::Outcome::kInconclusive);
  EXPECT_FALSE(out.all_qualified);
  EXPECT_FALSE(out.results.at("all_qualified").get<bool>());
  // No cost and no instances come from evidence short of a qualified capacity.
  const json& lines = out.results.at("demand_plan").at("lines");
  EXPECT_FALSE(lines.at(0).at("feasible").get<bool>());
}

TEST(PlanExecutor, ASearchPlannedFromThePredictionStartsAtThePredictedRate) {
  // start_from "prediction": the plan is predicted in virtual time first; the measured search
  // starts at the rate the twin qualified and moves by 1 + resolution.
  RunPlan plan = search_plan();
  plan.phases[0].start_from_knee = false;
  plan.phases[0].start_from_prediction = true;
  plan.phases[0].high_rps = 1000;  // the twin's answer lies below it, not at it
  EmbeddedSimulators sims;
  RecordingSink sink;
  PlanExecutor predictor(sims, sink, nullptr, ExecutionMode::kPredict);
  const ExecutionResult predicted = predictor.run(plan, std::stop_source().get_token());
  ASSERT_EQ(predicted.error, "");
  const json& ps = predicted.results["targets"][0]["phases"][0]["search"];
  ASSERT_TRUE(ps["qualified_rate_rps"].is_number()) << ps.dump();
  const double twin = ps["qualified_rate_rps"].get<double>();
  // The measured target here is a scripted one whose capacity is the twin's answer.
  KnownCapacityBackend backend(twin * 1.01, twin * 1.01, 4);
  PlanExecutor executor(sims, sink, &backend);
  const ExecutionResult out = executor.run(plan, std::stop_source().get_token());
  ASSERT_EQ(out.error, "");
  const json& search = out.results["targets"][0]["phases"][0]["search"];
  EXPECT_EQ(search["start_reason"], "prediction in virtual time");
  EXPECT_NEAR(search["start_rate_rps"].get<double>(), twin, 1e-3);
  EXPECT_NEAR(search["trials"][0]["rate_rps"].get<double>(), twin, 1e-3);
  // A pass at the prediction, a fail 5 % above it, the confirm: three steps.
  EXPECT_EQ(search["steps"].get<int>(), 3) << search.dump();
  EXPECT_NEAR(search["qualified_rate_rps"].get<double>(), twin, 1e-3);
}

TEST(PlanExecutor, AnSlaThatHoldsAtNoRateIsAFail) {
  // Nothing holds even at the search's lowest rate (1 rps): the SLA fails everywhere tried.
  EmbeddedSimulators sims;
  RecordingSink sink;
  KnownCapacityBackend backend(0.5, 0.5, 4);
  PlanExecutor executor(sims, sink, &backend);
  const ExecutionResult out = executor.run(search_plan(), std::stop_source().get_token());
  ASSERT_EQ(out.error, "");
  const json& t = out.results.at("targets").at(0);
  EXPECT_EQ(t.at("verdict").at("outcome"), "fail") << t.at("verdict").dump();
  const std::string statement = t["verdict"].at("statement").get<std::string>();
  EXPECT_NE(statement.find("the SLA failed at every level tried"), std::string::npos) << statement;
  EXPECT_EQ(out.verdict, analysis::Outcome::kFail);
}

// Issue 35 #3: a capacity search resumed after any number of its stored steps asks for the
// same steps, reaches the same answer and runs only the steps after the stored ones.
TEST(PlanExecutor, AResumedSearchContinuesAfterItsStoredStepsWithTheSameDecisions) {
  // Short steps hold to 7.5 rps, confirms only to 5: expansion, bisection, a failed confirm and
  // confirm-length steps after it, so every kind of decision depends on stored verdicts.
  EmbeddedSimulators sims;
  RecordingSink whole_sink;
  KnownCapacityBackend whole_backend(7.5, 5.0, 4);
  PlanExecutor whole(sims, whole_sink, &whole_backend);
  const ExecutionResult uncut = whole.run(search_plan(), std::stop_source().get_token());
  ASSERT_EQ(uncut.error, "");
  const json& uncut_phase = uncut.results["targets"][0]["phases"][0];
  const std::size_t n = whole_sink.steps.size();
  ASSERT_GE(n, 6u) << uncut_phase["search"].dump();
  for (std::size_t stored = 1; stored < n; ++stored) {
    SCOPED_TRACE("steps stored before the stop: " + std::to_string(stored));
    ResumeState resume;
    auto& phase_steps = resume.stored_steps[phase_key(0, 0, 0)];
    for (std::size_t i = 0; i < stored; ++i)  // as storage gives them back: JSON text
      phase_steps.push_back(json::parse(whole_sink.steps[i].dump()));
    resume.completed_steps = static_cast<std::int64_t>(stored);
    RecordingSink sink;
    KnownCapacityBackend backend(7.5, 5.0, 4);
    PlanExecutor executor(sims, sink, &backend);
    const ExecutionResult out = executor.run(search_plan(), std::stop_source().get_token(), resume);
    ASSERT_EQ(out.error, "");
    EXPECT_EQ(backend.calls, static_cast<int>(n - stored));  // the stored steps never run again
    ASSERT_EQ(sink.steps.size(), n - stored);
    const json& phase = out.results["targets"][0]["phases"][0];
    ASSERT_EQ(phase["steps"].size(), n);
    EXPECT_EQ(phase["resumed_steps"], stored);
    for (std::size_t i = 0; i < n; ++i) {
      const json& step = phase["steps"][i];
      EXPECT_EQ(step["global_step"], i);
      EXPECT_EQ(step["label"], whole_sink.steps[i]["label"]);
      EXPECT_EQ(step["verdict"]["outcome"], whole_sink.steps[i]["verdict"]["outcome"]);
      if (i < stored) {
        EXPECT_EQ(step, phase_steps[i]);  // kept as stored
      }
    }
    EXPECT_EQ(phase["search"], uncut_phase["search"]);
    EXPECT_EQ(out.results["targets"][0]["qualified"], uncut.results["targets"][0]["qualified"]);
    EXPECT_EQ(out.verdict, uncut.verdict);
  }
}

TEST(PlanExecutor, AStoredStepTheResumedPhaseDoesNotAskForFailsTheJobAndRunsNothing) {
  // The plan (or llmcapd) changed between the runs: the search now asks for another first rate.
  // Neither running it beside the stored step nor dropping the stored step is right.
  EmbeddedSimulators sims;
  RecordingSink first_sink;
  KnownCapacityBackend first_backend(7.5, 5.0, 4);
  PlanExecutor first(sims, first_sink, &first_backend);
  ASSERT_EQ(first.run(search_plan(), std::stop_source().get_token()).error, "");
  ResumeState resume;
  resume.stored_steps[phase_key(0, 0, 0)] = {first_sink.steps.at(0)};
  resume.completed_steps = 1;
  RunPlan changed = search_plan();
  changed.phases[0].start_rps = 3;
  RecordingSink sink;
  KnownCapacityBackend backend(7.5, 5.0, 4);
  PlanExecutor executor(sims, sink, &backend);
  const ExecutionResult out = executor.run(changed, std::stop_source().get_token(), resume);
  EXPECT_NE(out.error.find("cannot resume: stored step 0"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("its stored steps are kept"), std::string::npos) << out.error;
  EXPECT_EQ(backend.calls, 0);
}

TEST(PlanExecutor, StoredStepsAResumedPhaseNoLongerComesToFailTheJob) {
  // The search decides after the steps it asked for; one more stored step would stand in no
  // phase's results, so the job fails saying so instead of leaving it out.
  EmbeddedSimulators sims;
  RecordingSink first_sink;
  KnownCapacityBackend first_backend(7.5, 5.0, 4);
  PlanExecutor first(sims, first_sink, &first_backend);
  ASSERT_EQ(first.run(search_plan(), std::stop_source().get_token()).error, "");
  ResumeState resume;
  auto& stored = resume.stored_steps[phase_key(0, 0, 0)];
  stored = first_sink.steps;
  json extra = stored.back();
  extra["step"] = static_cast<int>(stored.size());
  extra["global_step"] = static_cast<int>(stored.size());
  stored.push_back(extra);
  resume.completed_steps = static_cast<std::int64_t>(stored.size());
  RecordingSink sink;
  KnownCapacityBackend backend(7.5, 5.0, 4);
  PlanExecutor executor(sims, sink, &backend);
  const ExecutionResult out = executor.run(search_plan(), std::stop_source().get_token(), resume);
  const std::string expected = "the phase ends after " + std::to_string(stored.size() - 1) +
                               " of its " + std::to_string(stored.size()) + " stored steps";
  EXPECT_NE(out.error.find(expected), std::string::npos) << out.error;
  EXPECT_EQ(backend.calls, 0);
}

TEST(PlanConversion, WorkloadCalibrateFalseReachesTheSteps) {
  // Issue 24 #3: a plan can skip the calibration probes when the lengths are known.
  json plan{{"version", 1},
            {"name", "nocal"},
            {"targets",
             json::array({json{{"name", "a"}, {"base_url", "sim://a100-80g-pcie/llama-3.1-8b"}}})},
            {"workload", json{{"calibrate", false}}},
            {"phases", json::array({json{{"kind", "concurrency_sweep"},
                                         {"levels", json::array({1})},
                                         {"duration_s", 1}}})}};
  auto parse = api::parse_plan(plan.dump());
  ASSERT_TRUE(parse.errors.empty()) << parse.errors.front().path;
  EXPECT_EQ(parse.normalized["workload"]["calibrate"], false);
  RunPlan out;
  ASSERT_EQ(to_run_plan(parse, out), "");
  EXPECT_FALSE(out.targets.at(0).workload.calibrate);
  plan["workload"].erase("calibrate");
  parse = api::parse_plan(plan.dump());
  ASSERT_EQ(to_run_plan(parse, out), "");
  EXPECT_TRUE(out.targets.at(0).workload.calibrate);
  plan["workload"]["calibrate"] = "no";
  parse = api::parse_plan(plan.dump());
  ASSERT_FALSE(parse.errors.empty());
  EXPECT_EQ(parse.errors.front().path, "/workload/calibrate");
}

}  // namespace
}  // namespace llmcap::server
