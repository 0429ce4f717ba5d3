// Roofline: the duration of one serving-engine iteration (one forward pass over a batch) for a
// model on a GPU under a serving engine (sim/README.md "Step time"). Kernels run one after
// another, each bound by its own roofline, so the step is their sum:
//
//   t = gemm + attention + overhead
//   gemm      = roof(weight bytes read / BW_eff, 2 × active params × tokens / (peak × eff))
//               (a dense model reads and computes all its parameters; a mixture of experts
//               computes each token's active parameters and reads the always-active ones plus
//               every expert some token of the step was routed to, analysis/model_spec.h)
//   attention = roof(KV bytes of every scheduled sequence / BW_eff,
//                    4 × layers × heads × head_dim × Σ attended positions / (peak16 × eff16))
//   roof(m, c) = max(m, c) + min(m, c)² / max(m, c): a smooth roofline — near the ridge, where
//                loads and tensor-core work take about as long, they hardly overlap (the sum);
//                far from it the larger bound alone
//   overhead  = engine step overhead + per-sequence cost × sequences
//               + admission cost when the step starts any request's prefill
//
// BW_eff = peak bandwidth × bandwidth_efficiency; peak × eff is the tensor rate of the weight
// dtype (analysis::compute_flops_per_s) times its achieved fraction
// (analysis::compute_efficiency_for: per GPU generation and precision). Pure; thread safety:
// const methods, freely shared.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model_spec.h"

namespace llmcap::sim {

// The CPU side of a serving engine, per iteration (sim/README.md "Engines"): what the GPU's
// roofline does not see.
struct EngineProfile {
  std::string name;            // "vllm", "vllm-2024", "trt-llm", "sglang", "llama.cpp"
  std::string description;     // one line: version and what dominates its overhead
  double step_overhead_s = 0;  // per iteration: scheduling, input preparation, kernel launches
  double per_seq_s = 0;        // per scheduled sequence per iteration: sampling, output processing
  // Admission of new requests (inputs, block tables, sampling state), once per step that starts
  // prefills: the per-request cost a lone request sees in its first-token time.
  double per_request_s = 0;
};

// The built-in engine profiles; nullopt for an unknown name.
std::optional<EngineProfile> engine_profile(std::string_view name);
std::vector<std::string> engine_names();
inline constexpr std::string_view kDefaultEngine = "vllm";

// One sequence's share of a step: new_tokens computed on top of cached_tokens already in KV.
// Decode is new_tokens = 1; a prefill chunk is new_tokens = chunk length; cached_tokens = 0 marks
// the step that starts a request's prefill.
struct SeqWork {
  std::int64_t new_tokens = 0;
  std::int64_t cached_tokens = 0;
};

struct StepCost {
  double flops = 0;  // GEMM + attention FLOPs
  double bytes = 0;  // weights + KV bytes read
  // Weight bytes the step reads: all weights of a dense model; for MoE the always-active ones
  // plus the experts the step's tokens were routed to (analysis::params_read_per_step).
  double weight_bytes_read = 0;
  double compute_s = 0;    // compute-bound time of the GEMMs and attention
  double memory_s = 0;     // memory-bound time of the GEMMs and attention
  double gemm_s = 0;       // max(weights, GEMM compute)
  double attention_s = 0;  // max(KV reads, attention compute)
  double overhead_s = 0;   // engine: per step, per sequence, per new request
  // Tensor parallelism: two all-reduces of the step's activations per layer (attention output,
  // MLP output), on the critical path: 2 × layers × (latency + bytes × 2(N−1)/N / bus bandwidth).
  double communication_s = 0;
  double total_s = 0;  // gemm_s + attention_s + overhead_s + communication_s
};

class Roofline {
 public:
  // tensor_parallel N: the model split over N GPUs of `hardware` (each GPU's share of weights,
  // FLOPs, heads and KV; every figure of step() is one GPU's, and the GPUs run in lockstep).
  Roofline(analysis::ModelSpec model, analysis::HardwareSpec hardware, analysis::Dtype dtype,
           double kv_bytes_per_element = 2.0,
           EngineProfile engine = *engine_profile(kDefaultEngine), int tensor_parallel = 1);

  StepCost step(std::span<const SeqWork> batch) const;
  // Convenience: `batch` sequences each decoding one token with `cached_tokens` in KV.
  StepCost decode(std::int64_t batch, std::int64_t cached_tokens) const;

  double weight_bytes() const { return weight_bytes_; }
  double kv_bytes_per_token() const { return kv_bytes_per_token_; }
  const analysis::ModelSpec& model() const { return model_; }
  const analysis::HardwareSpec& hardware() const { return hardware_; }
  const EngineProfile& engine() const { return engine_; }
  double step_overhead_s() const { return step_overhead_s_; }
  double gemm_flops_per_s() const { return gemm_flops_per_s_; }  // peak × efficiency
  double bytes_per_s() const { return bytes_per_s_; }            // peak × efficiency
  int tensor_parallel() const { return tensor_parallel_; }

 private:
  analysis::ModelSpec model_;
  analysis::HardwareSpec hardware_;
  EngineProfile engine_;
  double weight_bytes_;  // all weights, per GPU
  double bytes_per_param_;
  double kv_bytes_per_token_;
  double gemm_flops_per_s_;
  double attention_flops_per_s_;
  double bytes_per_s_;
  double step_overhead_s_;
  int tensor_parallel_ = 1;
  double heads_per_gpu_ = 0;  // attention heads computed on each GPU
};

}  // namespace llmcap::sim
