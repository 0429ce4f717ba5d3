// StepRunner: runs one step of load against an OpenAI-compatible target and returns what was
// measured (docs/metrics.md §2): closed loop (N in flight, replaced on completion, t_intended =
// when the slot freed) or open loop (arrivals from a seeded ArrivalProcess computed ahead and never
// slowed by the server; latency from t_intended; an in-flight cap whose refusals are counted).
// Warm-up, measurement window, drain (wait or cancel), then the result.
//
// Threading: run() is synchronous and blocking. It owns a private io_context and runs it on
// the calling thread, which becomes the agent's I/O thread for the step — never shared with
// the API or storage. All request state lives on that thread (no locks). The stop token may
// be triggered from any thread: it posts a stop onto the agent's io_context, which cancels the
// schedule and every in-flight request (they are reported as ErrorClass::kCancelled, never
// dropped). The progress callback is called on the agent thread about every
// progress_interval_ms and once at the end; it must be quick and must not block.
//
// A StepRunner holds no state between runs; run() may be called from several threads at once
// on different StepRunner objects (or the same one).
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>

#include "agent/step_result.h"
#include "agent/step_spec.h"

namespace llmcap::agent {

struct StepProgress {
  std::int64_t elapsed_ns = 0;  // since the step epoch
  bool in_window = false;       // measurement window running (after warm-up, before drain)
  bool draining = false;
  std::uint64_t intended = 0;
  std::uint64_t sent = 0;
  std::uint64_t completed_ok = 0;
  std::uint64_t failed = 0;
  std::uint64_t cancelled = 0;
  std::uint64_t in_flight = 0;
  std::uint64_t dropped_arrivals = 0;
  std::uint64_t output_tokens = 0;  // of ok requests so far
};

using ProgressCallback = std::function<void(const StepProgress&)>;

class StepRunner {
 public:
  // Runs the step to completion (or stop). Invalid specs, an unreachable model listing or a
  // bad dataset give a result with fatal_error set and no samples; request failures are
  // samples with their ErrorClass.
  StepResult run(const StepSpec& spec, std::stop_token stop = {},
                 const ProgressCallback& progress = {});
};

}  // namespace llmcap::agent
