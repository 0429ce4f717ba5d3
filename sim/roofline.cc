#include "sim/roofline.h"

#include "analysis/memory_fit.h"

#include <algorithm>
#include <array>

namespace llmcap::sim {

namespace {

// sim/README.md "Engines" gives each figure's source.
const std::array<EngineProfile, 5>& engines() {
  static const std::array<EngineProfile, 5> kEngines = {{
      {"vllm", "vLLM V1 (0.8+): CUDA graphs, engine core in its own process", 0.0005, 0.00008,
       0.001},
      {"vllm-2024", "vLLM V0 (0.4-0.6): Python scheduling and sampling in the step loop", 0.002,
       0.00015, 0.002},
      {"trt-llm", "TensorRT-LLM: C++ runtime, CUDA graphs", 0.0003, 0.0, 0.002},
      {"sglang", "SGLang: overlapped CPU scheduling, CUDA graphs", 0.0003, 0.00003, 0.001},
      {"llama.cpp", "llama.cpp server: one process, per-slot sampling", 0.001, 0.0005, 0.001},
  }};
  return kEngines;
}

// A smooth roofline (sim/README.md "Step time"): the larger bound plus the smaller one scaled by
// how close the two are; a 128-token prefill on an A100, at the ridge, takes about their sum.
double roof(double memory_s, double compute_s) {
  const double hi = std::max(memory_s, compute_s);
  const double lo = std::min(memory_s, compute_s);
  return hi > 0 ? hi + lo * lo / hi : 0.0;
}

}  // namespace

std::optional<EngineProfile> engine_profile(std::string_view name) {
  for (const EngineProfile& e : engines())
    if (e.name == name) return e;
  return std::nullopt;
}

std::vector<std::string> engine_names() {
  std::vector<std::string> names;
  for (const EngineProfile& e : engines()) names.push_back(e.name);
  return names;
}

Roofline::Roofline(analysis::ModelSpec model, analysis::HardwareSpec hardware,
                   analysis::Dtype dtype, double kv_bytes_per_element, EngineProfile engine,
                   int tensor_parallel)
    : model_(std::move(model)),
      hardware_(std::move(hardware)),
      engine_(std::move(engine)),
      weight_bytes_(analysis::weight_bytes(model_, dtype) / std::max(1, tensor_parallel)),
      bytes_per_param_(analysis::bytes_per_param(dtype)),
      kv_bytes_per_token_(analysis::kv_bytes_per_token(model_, kv_bytes_per_element) *
                          static_cast<double>(analysis::kv_heads_per_gpu(model_, tensor_parallel)) /
                          static_cast<double>(std::max<std::int64_t>(
                              model_.kv_heads > 0 ? model_.kv_heads : model_.heads, 1))),
      gemm_flops_per_s_(analysis::compute_flops_per_s(hardware_, dtype) *
                        analysis::compute_efficiency_for(hardware_, dtype)),
      // Attention runs in 16 bit whatever the weights are.
      attention_flops_per_s_(hardware_.bf16_tflops * 1e12 * hardware_.compute_efficiency),
      bytes_per_s_(hardware_.bandwidth_bytes_per_s * hardware_.bandwidth_efficiency),
      step_overhead_s_(hardware_.step_overhead_s >= 0 ? hardware_.step_overhead_s
                                                      : engine_.step_overhead_s),
      tensor_parallel_(std::max(1, tensor_parallel)),
      heads_per_gpu_(static_cast<double>(model_.heads) / std::max(1, tensor_parallel)) {}

StepCost Roofline::step(std::span<const SeqWork> batch) const {
  StepCost cost;
  double tokens = 0;
  double attended_positions = 0;  // Σ over new tokens of the positions each one attends to
  double kv_tokens = 0;
  double seqs = 0;
  double new_requests = 0;
  for (const SeqWork& s : batch) {
    const double n = static_cast<double>(s.new_tokens);
    const double c = static_cast<double>(s.cached_tokens);
    if (n <= 0) continue;
    tokens += n;
    attended_positions += n * c + n * (n + 1) / 2;  // token at position p sees p + 1 positions
    kv_tokens += c + n;
    seqs += 1;
    if (s.cached_tokens == 0) new_requests += 1;
  }
  if (tokens <= 0) return cost;
  const double gpus = static_cast<double>(tensor_parallel_);
  // Mixture of experts (sim/README.md "Mixture of experts"): the GEMMs compute each token's
  // active parameters but read every expert some token of the step was routed to; a dense
  // model's figures are its parameters and weight_bytes_.
  const bool moe = analysis::is_moe(model_);
  const double gemm_flops =
      2.0 * (moe ? analysis::active_params(model_) : model_.params) * tokens / gpus;
  const double weights_read_bytes =
      moe ? analysis::params_read_per_step(model_, tokens) * bytes_per_param_ / gpus
          : weight_bytes_;
  const double attention_flops = 4.0 * static_cast<double>(model_.layers) * heads_per_gpu_ *
                                 static_cast<double>(model_.head_dim) * attended_positions;
  const double kv_bytes = kv_bytes_per_token_ * kv_tokens;
  const double gemm_compute_s = gemm_flops / gemm_flops_per_s_;
  const double gemm_memory_s = weights_read_bytes / bytes_per_s_;
  const double attention_compute_s = attention_flops / attention_flops_per_s_;
  const double attention_memory_s = kv_bytes / bytes_per_s_;
  cost.flops = gemm_flops + attention_flops;
  cost.bytes = weights_read_bytes + kv_bytes;
  cost.weight_bytes_read = weights_read_bytes;
  cost.compute_s = gemm_compute_s + attention_compute_s;
  cost.memory_s = gemm_memory_s + attention_memory_s;
  cost.gemm_s = roof(gemm_memory_s, gemm_compute_s);
  cost.attention_s = roof(attention_memory_s, attention_compute_s);
  // Admission is one batched operation (inputs, block tables, sampling state of the new
  // requests): charged once per step that starts prefills, the per-request cost at batch 1.
  cost.overhead_s = step_overhead_s_ + engine_.per_seq_s * seqs +
                    (new_requests > 0 ? engine_.per_request_s : 0.0);
  if (tensor_parallel_ > 1) {
    // Two all-reduces per layer of the step's 16-bit activations (ring algorithm: each GPU sends
    // and receives 2(N−1)/N of the message; nccl-tests' bus bandwidth is that traffic's rate).
    const double message_bytes = tokens * static_cast<double>(model_.hidden) * 2.0;
    const double per_allreduce_s =
        hardware_.allreduce_latency_us * 1e-6 +
        message_bytes * 2.0 * (gpus - 1) / gpus / (hardware_.allreduce_bus_gbps * 1e9);
    cost.communication_s = 2.0 * static_cast<double>(model_.layers) * per_allreduce_s;
  }
  cost.total_s = cost.gemm_s + cost.attention_s + cost.overhead_s + cost.communication_s;
  return cost;
}

StepCost Roofline::decode(std::int64_t batch, std::int64_t cached_tokens) const {
  std::vector<SeqWork> work(static_cast<std::size_t>(std::max<std::int64_t>(batch, 0)),
                            SeqWork{1, cached_tokens});
  return step(work);
}

}  // namespace llmcap::sim
