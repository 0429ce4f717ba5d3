// An http(s) target that is llmcap's own simulator (`llmcapd sim`) is recognised from its
// GET /v1/models, and then measured as a sim:// target is: compressed by its time_scale and
// scaled back, and labelled simulated (issue 40: it read time_scale times optimistic and
// "simulated: false" before).
#include "server/engine/target_probe.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stop_token>

#include "api/plan_reader.h"
#include "server/engine/embedded_sims.h"
#include "server/engine/plan_conversion.h"
#include "server/engine/plan_executor.h"

namespace llmcap::server {
namespace {

using nlohmann::json;

TEST(TargetProbe, TheSimulatorsModelListSaysSimulatedWithItsTimeScale) {
  const json sim{{"object", "list"},
                 {"data", json::array({json{{"id", "llama-3.1-8b"},
                                            {"object", "model"},
                                            {"owned_by", "llmcap-sim"},
                                            {"metadata",
                                             {{"simulated", true},
                                              {"hardware", "a100-80g-pcie"},
                                              {"model", "llama-3.1-8b"},
                                              {"time_scale", 4}}}}})}};
  const auto id = simulator_identity(sim.dump());
  ASSERT_TRUE(id);
  EXPECT_DOUBLE_EQ(id->time_scale, 4);
  EXPECT_EQ(id->hardware, "a100-80g-pcie");
  EXPECT_EQ(id->model, "llama-3.1-8b");
}

TEST(TargetProbe, AnyOtherServerOrBodyIsNotTheSimulator) {
  // vLLM's list (no metadata), a metadata without simulated, simulated false or "true", and
  // bodies that are no model list at all.
  const json vllm{{"object", "list"},
                  {"data", json::array({json{{"id", "meta-llama/Llama-3.1-8B-Instruct"},
                                             {"object", "model"},
                                             {"owned_by", "vllm"},
                                             {"max_model_len", 8192}}})}};
  EXPECT_FALSE(simulator_identity(vllm.dump()));
  for (const json& meta : {json::object(), json{{"simulated", false}, {"time_scale", 4}},
                           json{{"simulated", "true"}, {"time_scale", 4}}}) {
    json body = vllm;
    body["data"][0]["metadata"] = meta;
    EXPECT_FALSE(simulator_identity(body.dump())) << meta.dump();
  }
  for (const char* body : {"", "not json", "[]", "{}", R"({"data": []})", R"({"data": [1]})",
                           R"({"data": {"metadata": {"simulated": true}}})"})
    EXPECT_FALSE(simulator_identity(body)) << body;
}

TEST(TargetProbe, AMissingOrImpossibleTimeScaleReadsOne) {
  for (const json& k : {json(nullptr), json(0), json(-2), json("4")}) {
    json meta{{"simulated", true}};
    if (!k.is_null()) meta["time_scale"] = k;
    const json body{{"data", json::array({json{{"id", "m"}, {"metadata", meta}}})}};
    const auto id = simulator_identity(body.dump());
    ASSERT_TRUE(id) << k.dump();
    EXPECT_DOUBLE_EQ(id->time_scale, 1) << k.dump();
  }
}

// A backend whose target says it is the simulator at time_scale 4; records what it is asked.
class SimulatorBackend final : public StepBackend {
 public:
  BackendStep run(const agent::StepSpec& spec, std::int64_t /*global_step*/,
                  std::stop_token /*stop*/, const agent::ProgressCallback& /*progress*/) override {
    duration_s = spec.duration_s;
    agent::StepResult r;
    r.model = "llama-3.1-8b";
    r.fatal_error = "scripted: no load generated";  // ends the job after the first step
    return BackendStep{r, nullptr, std::nullopt};
  }
  std::optional<SimulatorIdentity> identify(const agent::TargetSpec& target) override {
    ++identified;
    asked_url = target.base_url;
    return SimulatorIdentity{4, "a100-80g-pcie", "llama-3.1-8b"};
  }
  int identified = 0;
  std::string asked_url;
  double duration_s = 0;
};

class DescriptionSink final : public ExecutionSink {
 public:
  void on_target_started(const RunTarget& target, const std::string& /*url*/,
                         const std::string& text) override {
    description = text;
    time_scale = target.time_scale;
  }
  std::string description;
  double time_scale = 0;
};

TEST(TargetProbe, AnHttpTargetThatIsTheSimulatorIsCompressedAndLabelledSimulated) {
  const json plan{
      {"version", 1},
      {"name", "sim-over-http"},
      {"targets",
       json::array({json{
           {"name", "box"}, {"base_url", "http://127.0.0.1:8000"}, {"model", "llama-3.1-8b"}}})},
      {"workload",
       json{{"input_tokens", json{{"fixed", 64}}}, {"output_tokens", json{{"fixed", 8}}}}},
      {"sla", json{{"ttft_ms", json{{"p95", 5000}}}, {"min_requests", 1}}},
      {"phases", json::array({json{{"kind", "concurrency_sweep"},
                                   {"levels", json::array({1})},
                                   {"duration_s", 40},
                                   {"warmup_s", 0}}})}};
  const auto parse = api::parse_plan(plan.dump());
  ASSERT_TRUE(parse.errors.empty()) << parse.errors.front().path;
  RunPlan run_plan;
  ASSERT_EQ(to_run_plan(parse, run_plan), "");
  EmbeddedSimulators sims;
  DescriptionSink sink;
  SimulatorBackend backend;
  PlanExecutor executor(sims, sink, &backend);
  std::stop_source stop;
  const ExecutionResult out = executor.run(run_plan, stop.get_token());
  EXPECT_EQ(backend.identified, 1);
  EXPECT_EQ(backend.asked_url, "http://127.0.0.1:8000");
  EXPECT_DOUBLE_EQ(sink.time_scale, 4);
  EXPECT_DOUBLE_EQ(backend.duration_s, 10);  // 40 s of simulated time in 10 s of wall clock
  EXPECT_NE(sink.description.find("llmcap simulator"), std::string::npos) << sink.description;
  EXPECT_NE(sink.description.find("time_scale 4"), std::string::npos) << sink.description;
  ASSERT_TRUE(out.results.contains("targets")) << out.results.dump();
  ASSERT_EQ(out.results["targets"].size(), 1u);
  EXPECT_EQ(out.results["targets"][0]["simulated"], true);
  EXPECT_EQ(out.results["targets"][0]["time_scale"], 4.0);
}

}  // namespace
}  // namespace llmcap::server
