// ModelSpec, HardwareSpec and Dtype: the facts about a transformer model and a GPU that the
// memory-fit estimator (memory_fit.h) and the simulator's roofline (sim/roofline.h) compute
// from. Plain values; figures (docs/metrics.md §11) come via sim/profiles/*.json (parsed in sim/,
// analysis/ does no I/O). Thread safety: values, freely copyable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmcap::analysis {

// Precision of the weights. Quantised formats are weight-only unless the GPU has a matching
// tensor-core rate (see compute_tflops()).
enum class Dtype { kBf16, kFp16, kFp8, kInt8, kInt4 };

// "bf16", "fp16", "fp8", "int8", "int4" (also "bfloat16", "float16", "w8", "w4" aliases).
std::optional<Dtype> parse_dtype(std::string_view text);
std::string_view to_string(Dtype dtype);

// Bytes stored per parameter, including quantisation metadata (docs/metrics.md §7):
//   bf16/fp16: 2;  fp8: 1 (per-tensor/per-channel scales, negligible);
//   int8: 1 (per-channel scales, negligible);
//   int4: 0.5 + 1/32 — group size 128 with one fp16 scale and one fp16 zero point per group
//         (2 × 2 bytes / 128 params = 1/32 byte per parameter), as in GPTQ/AWQ checkpoints.
double bytes_per_param(Dtype dtype);

struct ModelSpec {
  std::string name;                     // profile name, e.g. "llama-3.1-8b"
  double params = 0;                    // parameter count, e.g. 8.03e9
  std::int64_t layers = 0;              // transformer blocks
  std::int64_t hidden = 0;              // model width
  std::int64_t heads = 0;               // query heads
  std::int64_t kv_heads = 0;            // key/value heads (GQA); equals heads for MHA
  std::int64_t head_dim = 0;            // per-head width
  std::int64_t ffn = 0;                 // MLP intermediate width
  std::int64_t vocab = 0;               // vocabulary size
  std::int64_t max_context_tokens = 0;  // longest sequence the model supports
  bool tied_embeddings = false;         // LM head shares the embedding matrix (tie_word_embeddings)
  // Memory reserved outside the KV pool, bytes; < 0 (the default) computes it from the model's
  // shape and the engine's token budget (analysis::non_kv_reserve_bytes, docs/metrics.md §7).
  double activation_reserve_bytes = -1;
  // Mixture of experts (sim/README.md "Mixture of experts"); experts = 0 is a dense model. Every
  // layer's MLP is a router over `experts` SwiGLU experts (gate, up and down projections of
  // expert_ffn width) of which each token uses experts_per_token, plus optional shared experts
  // every token uses. `params` stays the total (what memory holds); everything that is not a
  // routed expert (attention, embeddings, norms, routers, shared experts) is always active.
  std::int64_t experts = 0;            // routed experts per layer (num_local_experts, num_experts)
  std::int64_t experts_per_token = 0;  // top-k: routed experts per token (num_experts_per_tok)
  std::int64_t expert_ffn = 0;         // one routed expert's width (moe_intermediate_size)
  std::int64_t shared_expert_ffn =
      0;  // shared experts' total width (shared_expert_intermediate_size)
};

// True for a mixture-of-experts model (experts > 0).
bool is_moe(const ModelSpec& model);

// Parameters of one routed expert over all layers: 3 × hidden × expert_ffn × layers (SwiGLU's
// gate, up and down projections); 0 for a dense model.
double expert_params(const ModelSpec& model);

// Parameters every token uses: all of a dense model; for MoE, params − experts × expert_params
// plus experts_per_token × expert_params (Mixtral-8x7B: 12.9 of 46.7 billion).
double active_params(const ModelSpec& model);

// Expected number of distinct experts a layer uses when `tokens` tokens are each routed to
// `experts_per_token` of `experts` experts, uniformly and independently:
//   E × (1 − (1 − k/E)^tokens)
// k at one token, approaching E as the batch grows (Mixtral, 8 experts top-2: 2 at 1 token, 7.2 at
// 8, 7.99 at 32).
double expected_distinct_experts(double experts, double experts_per_token, double tokens);

// Parameters a forward pass over `tokens` tokens reads from memory: all of a dense model; for MoE
// the always-active parameters plus expected_distinct_experts() routed experts per layer.
double params_read_per_step(const ModelSpec& model, double tokens);

// MLP width each token activates (what its activations hold): ffn for a dense model,
// experts_per_token × expert_ffn + shared_expert_ffn for MoE.
double active_ffn(const ModelSpec& model);

struct HardwareSpec {
  std::string name;          // profile name, e.g. "a100-80g-pcie"
  std::string display_name;  // e.g. "NVIDIA A100 80GB PCIe"
  // Total memory as CUDA reports it (torch.cuda.mem_get_info), bytes: what vLLM multiplies by
  // gpu_memory_utilization; below the datasheet's GB (docs/metrics.md §11).
  double memory_bytes = 0;
  double nominal_memory_gb = 0;      // the datasheet's figure in 10^9 bytes, e.g. 80
  double bandwidth_bytes_per_s = 0;  // peak DRAM bandwidth
  double bf16_tflops = 0;            // dense BF16/FP16 tensor rate (no sparsity)
  double fp8_tflops = 0;             // dense FP8 rate; 0 when the GPU has no FP8 tensor cores
  double int8_tflops = 0;            // dense INT8 rate; 0 when unknown
  double tdp_watts = 0;
  std::string form_factor;   // "PCIe", "SXM"
  std::string interconnect;  // e.g. "PCIe 4, no NVLink"
  // GPU-to-GPU all-reduce under tensor parallelism (sim/README.md "Tensor parallelism"): the
  // bus bandwidth NCCL achieves between these GPUs in one server (nccl-tests' busbw, 10^9
  // bytes/s) and the fixed cost of one all-reduce. 0 = unknown (no tensor parallelism).
  double allreduce_bus_gbps = 0;
  double allreduce_latency_us = 0;
  // Architecture generation: "ampere", "ada", "hopper", "blackwell"; picks the achieved fraction
  // of the 8-bit tensor rate (compute_efficiency_for()). Empty = unknown.
  std::string generation;
  // Achieved fractions of peak (docs/metrics.md §11, sim/README.md "Step time"): weight and KV
  // streaming ≈ 0.8; large 16-bit GEMMs ≈ 0.75 of the dense peak. fp8_compute_efficiency < 0
  // takes the generation's figure for 8-bit GEMMs (FP8/INT8 tensor rates).
  double bandwidth_efficiency = 0.8;
  double compute_efficiency = 0.75;
  double fp8_compute_efficiency = -1;
  // Fixed per-step cost override; < 0 (the default): the serving engine's (sim::EngineProfile).
  double step_overhead_s = -1;
};

// The tensor rate (FLOP/s, peak) used when running weights of this dtype on this GPU: FP8
// weights use the FP8 rate when the GPU has one, INT8 uses the INT8 rate when known; every other
// case (weight-only int4/int8, fp8 on Ampere) dequantises and computes in BF16.
double compute_flops_per_s(const HardwareSpec& hw, Dtype dtype);

// True when weights of this dtype run on the GPU's 8-bit tensor rate (FP8 with FP8 tensor cores,
// INT8 with a known INT8 rate); false when they are dequantised and computed in 16 bit.
bool uses_8bit_tensor_rate(const HardwareSpec& hw, Dtype dtype);

// Achieved fraction of compute_flops_per_s() for large GEMMs: compute_efficiency in 16 bit; on the
// 8-bit rate fp8_compute_efficiency, else by generation (sim/README.md): hopper and blackwell
// 0.45, ada 0.62, other 0.50 — TensorRT-LLM reaches 40–54 % of FP8 peak in prefill.
double compute_efficiency_for(const HardwareSpec& hw, Dtype dtype);

// KV cache bytes per cached token: 2 × layers × KV heads × head dim × bytes per element
// (docs/metrics.md §7; KV heads, not query heads).
double kv_bytes_per_token(const ModelSpec& model, double kv_bytes_per_element = 2.0);

// Weight bytes: params × bytes_per_param(dtype) (all experts of an MoE model).
double weight_bytes(const ModelSpec& model, Dtype dtype);

}  // namespace llmcap::analysis
