// Roofline: the duration of one serving-engine iteration (one forward pass over a batch) for a
// model on a GPU, from a roofline with explicit efficiency factors (docs/metrics.md §11):
//
//   t = max(FLOPs / (peak FLOP/s × compute_efficiency),
//           bytes / (peak bandwidth × bandwidth_efficiency)) + step_overhead
//   FLOPs = 2 × params × tokens + attention, attention = 4 × layers × heads × head_dim × Σ
//           (positions attended by each new token)
//   bytes = weights (read once per step) + KV read/written for every scheduled sequence
//           (kv_bytes_per_token × (cached + new tokens))
//
// Activation traffic and the LM-head softmax are ignored (small next to weights at these
// batch sizes). Pure; thread safety: const methods, freely shared.
#pragma once

#include <cstdint>
#include <span>

#include "analysis/model_spec.h"

namespace llmcap::sim {

// One sequence's share of a step: new_tokens computed on top of cached_tokens already in KV.
// Decode is new_tokens = 1; a prefill chunk is new_tokens = chunk length.
struct SeqWork {
  std::int64_t new_tokens = 0;
  std::int64_t cached_tokens = 0;
};

struct StepCost {
  double flops = 0;
  double bytes = 0;
  double compute_s = 0;   // flops / effective peak
  double memory_s = 0;    // bytes / effective bandwidth
  double overhead_s = 0;  // fixed per step
  double total_s = 0;     // max(compute_s, memory_s) + overhead_s
};

class Roofline {
 public:
  Roofline(analysis::ModelSpec model, analysis::HardwareSpec hardware, analysis::Dtype dtype,
           double kv_bytes_per_element = 2.0);

  StepCost step(std::span<const SeqWork> batch) const;
  // Convenience: `batch` sequences each decoding one token with `cached_tokens` in KV.
  StepCost decode(std::int64_t batch, std::int64_t cached_tokens) const;

  double weight_bytes() const { return weight_bytes_; }
  double kv_bytes_per_token() const { return kv_bytes_per_token_; }
  const analysis::ModelSpec& model() const { return model_; }
  const analysis::HardwareSpec& hardware() const { return hardware_; }

 private:
  analysis::ModelSpec model_;
  analysis::HardwareSpec hardware_;
  double weight_bytes_;
  double kv_bytes_per_token_;
  double effective_flops_per_s_;
  double effective_bytes_per_s_;
};

}  // namespace llmcap::sim
