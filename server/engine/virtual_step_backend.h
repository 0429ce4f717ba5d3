// VirtualStepBackend: one step of load against a simulated target, run in virtual time (issue 20,
// docs/prediction.md). The load generator's schedule — closed loop (N in flight, replaced at
// completion), open loop (the same seeded ArrivalProcess, in-flight cap, dropped arrivals),
// warm-up, time or request-count windows, drain (wait with its timeout, or cancel), deadlines
// (first token, idle, total) — and the simulator's engine (sim::BatchEngine with the target's
// sim::SimModel) advance one discrete-event clock: no sockets, no timers, no sleeping. It returns
// the StepResult a measured step returns (samples, ITL histogram, in-flight series), so the
// executor judges it with the same statistics, verdicts, capacity search, cost and demand code.
//
// Fidelity to a measured run against the same sim:// target (the SimServer on real timers):
//   - the engine's iteration semantics are SimEngineRunner's: a request that arrives while a
//     step runs joins the next step; a step begins the instant the previous one ends, before the
//     client has reacted to its tokens (so a closed-loop replacement joins the step after next);
//   - the request's lengths are the same seeded draws (PromptFactory::next_lengths) and the
//     simulator's own checks apply (prompt + max_tokens > max_model_len is a 400);
//   - the network is free: a measured run adds loopback and HTTP time (tens of µs per request)
//     and the host's timer jitter; bench/RESULTS.md records the difference.
// Same StepSpec and seed → identical result on any machine: nothing here reads a clock.
//
// The engine persists across steps, as the simulated server does (its KV cache and counters
// carry over); each step ends with nothing in flight. Telemetry is produced from the engine's
// state on the plan's telemetry grid (vLLM's series names), so steps carry the same server-side
// view a scraped simulator gives.
//
// Not supported (a clear error from unsupported()): fault injection, and dataset workloads.
// Thread-safety: one step at a time (a job runs its steps in order).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/engine/step_backend.h"
#include "sim/batch_engine.h"
#include "sim/sim_model.h"
#include "sim/sim_options.h"

namespace llmcap::server {

class VirtualStepBackend final : public StepBackend {
 public:
  // telemetry_interval_s: the grid of the produced telemetry points (the plan's scrape period).
  VirtualStepBackend(sim::SimModel model, sim::SimOptions options,
                     double telemetry_interval_s = 1.0);

  BackendStep run(const agent::StepSpec& spec, std::int64_t global_step, std::stop_token stop,
                  const agent::ProgressCallback& progress) override;
  bool provides_telemetry() const override { return true; }

  // Why a target with these options (or this workload) cannot be predicted, naming the field;
  // nullopt when it can.
  static std::optional<std::string> unsupported(const sim::SimOptions& options,
                                                const agent::WorkloadSpec& workload);

  const sim::SimModel& model() const { return model_; }

 private:
  sim::SimModel model_;
  sim::SimOptions options_;
  double telemetry_interval_s_;
  sim::BatchEngine engine_;
  std::uint64_t next_engine_id_ = 1;
};

}  // namespace llmcap::server
