// StepBackend: the seam where the executor has one step of load generated (issue 11). The
// PlanExecutor builds the step's StepSpec (time compression included), hands it to a backend,
// and judges the StepResult it gets back, whoever produced it:
//   LocalStepBackend   runs agent::StepRunner in this process (the default);
//   ShardCoordinator   (server/fleet/shard_coordinator.h) splits the step over `llmcapd agent`
//                      processes and merges their results.
// run() blocks the calling thread (a job worker) until the step is over. A backend that cannot
// produce the step returns a result with fatal_error set, which fails the job with that reason.
// `extra`, when not null, is stored in the step's results document under "agents".
// Thread-safety: one step at a time per backend (a job runs its steps in order).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stop_token>

#include "agent/step_result.h"
#include "agent/step_runner.h"
#include "agent/step_spec.h"

namespace llmcap::server {

struct BackendStep {
  agent::StepResult result;
  nlohmann::json extra;  // null: nothing to add to the step document
};

class StepBackend {
 public:
  virtual ~StepBackend() = default;
  // global_step: the step's number within the job (StepContext::global_step).
  virtual BackendStep run(const agent::StepSpec& spec, std::int64_t global_step,
                          std::stop_token stop, const agent::ProgressCallback& progress) = 0;
};

class LocalStepBackend final : public StepBackend {
 public:
  BackendStep run(const agent::StepSpec& spec, std::int64_t /*global_step*/, std::stop_token stop,
                  const agent::ProgressCallback& progress) override {
    agent::StepRunner runner;
    return BackendStep{runner.run(spec, std::move(stop), progress), nullptr};
  }
};

}  // namespace llmcap::server
