// StepBackend: the seam where the executor has one step of load generated (issue 11). The
// PlanExecutor builds the step's StepSpec (time compression included), hands it to a backend,
// and judges the StepResult it gets back, whoever produced it:
//   LocalStepBackend   runs agent::StepRunner in this process (the default), and asks an http(s)
//                      target whether it is llmcap's simulator (identify());
//   ShardCoordinator   (server/fleet/shard_coordinator.h) splits the step over `llmcapd agent`
//                      processes and merges their results;
//   VirtualStepBackend (server/engine/virtual_step_backend.h) runs a simulated target in
//                      virtual time (prediction) and produces the target's telemetry itself.
// run() blocks the calling thread (a job worker) until the step is over. A backend that cannot
// produce the step returns a result with fatal_error set, which fails the job with that reason.
// `extra`, when not null, is stored in the step's results document under "agents".
// Thread-safety: one step at a time per backend (a job runs its steps in order).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>

#include "agent/step_result.h"
#include "agent/step_runner.h"
#include "agent/step_spec.h"
#include "agent/telemetry_scraper.h"
#include "server/engine/target_probe.h"

namespace llmcap::server {

struct BackendStep {
  agent::StepResult result;
  nlohmann::json extra;  // null: nothing to add to the step document
  // The target's telemetry over the step, on the samples' clock, from a backend that
  // provides_telemetry(); nullopt: the executor scrapes the target's metrics itself.
  std::optional<agent::TelemetryResult> telemetry;
};

class StepBackend {
 public:
  virtual ~StepBackend() = default;
  // global_step: the step's number within the job (StepContext::global_step).
  virtual BackendStep run(const agent::StepSpec& spec, std::int64_t global_step,
                          std::stop_token stop, const agent::ProgressCallback& progress) = 0;
  // True when run() fills BackendStep::telemetry (no target to scrape).
  virtual bool provides_telemetry() const { return false; }
  // Whether an http(s) target is llmcap's own simulator (server/engine/target_probe.h), asked
  // once before the target's first step; nullopt: a server to take as it is (the default).
  virtual std::optional<SimulatorIdentity> identify(const agent::TargetSpec& /*target*/) {
    return std::nullopt;
  }
};

class LocalStepBackend final : public StepBackend {
 public:
  BackendStep run(const agent::StepSpec& spec, std::int64_t /*global_step*/, std::stop_token stop,
                  const agent::ProgressCallback& progress) override {
    agent::StepRunner runner;
    return BackendStep{runner.run(spec, std::move(stop), progress), nullptr, std::nullopt};
  }
  std::optional<SimulatorIdentity> identify(const agent::TargetSpec& target) override {
    return probe_simulator(target);
  }
};

}  // namespace llmcap::server
