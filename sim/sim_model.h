// SimModel: everything that decides the simulated engine's timing, resolved from SimOptions —
// the GPU and model profiles, the memory budget (KV pool), the effective max_model_len, the
// scheduler's configuration and the step-time roofline. One construction shared by the
// simulated HTTP server (SimServer) and by virtual-time prediction, so both model the same
// engine. Plain value; thread safety: const use from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/memory_fit.h"
#include "analysis/model_spec.h"
#include "sim/batch_engine.h"
#include "sim/roofline.h"
#include "sim/sim_options.h"

namespace llmcap::sim {

struct SimModel {
  analysis::HardwareSpec hardware;
  analysis::ModelSpec model;
  analysis::Dtype dtype = analysis::Dtype::kBf16;
  analysis::MemoryFit fit;
  std::int64_t max_model_len = 0;
  EngineConfig engine_config;
  Roofline roofline;
};

// Checks every option (throws std::runtime_error naming the field: "sim option time_scale: must
// be > 0").
void validate_sim_options(const SimOptions& options);

// Validates the options, resolves the profiles (built-in plus options.profiles_file) and sizes
// memory. Throws std::runtime_error with the numbers when the model or one max_model_len
// sequence does not fit, and for unknown hardware/model/dtype names (listing the known ones).
SimModel build_sim_model(const SimOptions& options);

// One line for logs and results: hardware, model, dtype, serving engine, weights, KV pool (with
// vLLM's "# GPU blocks" and "maximum concurrency" figures), max_model_len and the scheduler's
// limits.
std::string describe(const SimModel& model);

}  // namespace llmcap::sim
