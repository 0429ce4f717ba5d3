// PlanExecutor: runs a RunPlan — for each target, its phases in order, each phase as load
// steps through agent::StepRunner — judges every step (analysis/verdict), drives capacity
// searches, and assembles the job's results document (steps, verdicts, qualified capacity,
// comparison, demand plan). Shared by `llmcapd run` (console sink) and the daemon's scheduler
// (storage + metrics sink).
//
// Threading: run() blocks the calling thread (a job worker, never an I/O thread); the load
// generator runs on its own threads inside StepRunner. The sink is called on the calling
// thread, except on_progress(), which is called on the load generator's thread.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <vector>

#include "agent/step_result.h"
#include "agent/step_runner.h"
#include "agent/telemetry_scraper.h"
#include "analysis/step_stats.h"
#include "analysis/verdict.h"
#include "server/engine/run_plan.h"
#include "server/engine/step_backend.h"

namespace llmcap::server {

class EmbeddedSimulators;

// Where one step sits in the job. global_step numbers every step of the job from 0, in run
// order, so progress and resume can refer to it.
struct StepContext {
  std::size_t target_index = 0;
  std::string target;
  std::size_t phase_index = 0;
  std::string phase;  // the phase's name
  PhaseKind kind = PhaseKind::kConcurrencySweep;
  int repeat_index = 0;
  int step_index = 0;  // within the phase run
  std::int64_t global_step = 0;
  std::string label;               // "c=8", "12.50 rps", "confirm 12.50 rps", "burst ×3"
  nlohmann::json params;           // the load parameters of the step
  double planned_s = 0;            // warm-up + duration (+ burst observation), plan time
  double time_scale = 1;           // a simulated target's compression: wall = plan / time_scale
  std::int64_t planned_steps = 0;  // the executor's estimate of the job's total steps
};

// A finished step, typed: what the load generator measured, the statistics and verdict computed
// from it, and its results document (the JSON shape of all this, api/result_json.h), which the
// sink stores or sends but need not read. References valid during on_step_finished() only.
struct StepOutcome {
  const agent::StepResult& result;                      // samples, ITL histogram, client figures
  const std::vector<agent::TelemetryPoint>& telemetry;  // target's metrics (samples' clock)
  const analysis::StepStats& stats;
  const analysis::StepVerdict& verdict;
  const nlohmann::json& document;  // the step's entry in the results' `steps`
  bool partial() const { return result.cancelled || !result.completed; }
};

// Receives what happens during a run. Default implementations do nothing.
class ExecutionSink {
 public:
  virtual ~ExecutionSink() = default;
  virtual void on_target_started(const RunTarget& /*target*/, const std::string& /*url*/,
                                 const std::string& /*description*/) {}
  virtual void on_step_started(const StepContext& /*ctx*/) {}
  // Called on the load generator's thread about once a second.
  virtual void on_progress(const StepContext& /*ctx*/, const agent::StepProgress& /*p*/) {}
  // A step ended (cancelled steps too, with partial data). Returning false aborts the job
  // with `error` (e.g. its data could not be stored).
  virtual bool on_step_finished(const StepContext& /*ctx*/, const StepOutcome& /*step*/,
                                std::string& /*error*/) {
    return true;
  }
  virtual void on_phase_finished(const StepContext& /*ctx*/, const nlohmann::json& /*phase*/) {}
};

// What an earlier (interrupted) run of the same job stored, keyed by phase_key(). A resumed
// run keeps all of it and runs only what is missing (README.md, "Resuming a job"):
// - a completed phase's stored document is reused whole;
// - a phase the daemon stopped in continues after its stored steps: each of them stands for
//   the step the phase asks for at its place (a sweep's level, a capacity search's rate,
//   re-derived from the stored verdicts), and only the steps after them run. When a stored step
//   is not the one the phase asks for, or the phase ends before its last stored step (the plan
//   or llmcapd changed in between), the job fails saying so; no stored step is removed or run
//   again.
// - a burst or soak whose one step was stored but whose phase document was not (a kill between
//   the two) keeps the step; its phase analysis says it is not available (analysis_available).
struct ResumeState {
  std::map<std::string, nlohmann::json> completed_phases;
  // The stored step documents (StepOutcome::document) of the phases not in completed_phases,
  // each phase's in run order.
  std::map<std::string, std::vector<nlohmann::json>> stored_steps;
  // The global_step after the last stored step: the next step the job runs.
  std::int64_t completed_steps = 0;
};
std::string phase_key(std::size_t target_index, std::size_t phase_index, int repeat_index);

struct ExecutionResult {
  bool cancelled = false;
  std::string error;           // non-empty: the job failed (target unreachable, storage error…)
  nlohmann::json results;      // the results document (partial when cancelled or failed)
  bool all_qualified = false;  // every target has a qualified capacity (verdict == pass)
  // The job's verdict (analysis/target_verdict.h): pass only when every target passed.
  analysis::Outcome verdict = analysis::Outcome::kInconclusive;
};

// A capacity search planned from the plan's prediction (start_from "prediction"): the rate the
// twin qualified and the lowest rate that failed above it there (0: none), a confirm or not.
struct PlannedSearch {
  double rate_rps = 0;
  double high_rps = 0;
  bool high_confirm = false;
};

// kMeasure: load is sent to the targets (sim:// targets through their embedded simulators, in
// compressed real time). kPredict: every target must be sim://; each runs in virtual time
// (server/engine/virtual_step_backend.h) and the results are marked "predicted".
enum class ExecutionMode { kMeasure, kPredict };

class PlanExecutor {
 public:
  // backend: who generates each step's load (server/engine/step_backend.h); nullptr: this process.
  // In kPredict mode the backend is ignored: each target gets its virtual backend.
  PlanExecutor(EmbeddedSimulators& sims, ExecutionSink& sink, StepBackend* backend = nullptr,
               ExecutionMode mode = ExecutionMode::kMeasure);
  ExecutionResult run(const RunPlan& plan, std::stop_token stop, const ResumeState& resume = {});

  // Steps the plan will run at most (capacity searches counted at max_steps + confirms).
  static std::int64_t planned_steps(const RunPlan& plan);
  // Why the plan cannot run in kPredict mode, one line per problem, each starting with the
  // plan path it is about ("/targets/1/base_url: ..."); empty when it can.
  static std::vector<std::string> prediction_problems(const RunPlan& plan);

 private:
  // Measured runs with a capacity search that starts from "prediction": the plan predicted in
  // virtual time first (under a second for the demo), each target's qualified rate by phase
  // name (parallel to plan.targets). Empty, with `unavailable` saying why, when the plan
  // cannot be predicted (a real target, a dataset workload, ...).
  std::vector<std::map<std::string, PlannedSearch>> predicted_search_starts(
      const RunPlan& plan, std::stop_token stop, std::string& unavailable);

  EmbeddedSimulators& sims_;
  ExecutionSink& sink_;
  LocalStepBackend local_;
  StepBackend* backend_;  // never null: &local_ unless given
  ExecutionMode mode_;
};

}  // namespace llmcap::server
