// MemoryFit: how a model fits on a GPU under a vLLM-style memory budget (docs/metrics.md §7).
// Shared by the simulator (sim/, to size its KV pool and refuse to start) and the API (a fit
// estimate endpoint). Pure arithmetic, no I/O. Thread safety: free functions over values.
//
// vLLM's accounting (docs/metrics.md §7): KV pool = gpu_memory_utilization × the GPU's total
// memory as CUDA reports it (GiB-true, not the datasheet's GB) − weights − the non-KV reserve;
// the pool is cut into paged blocks of block_tokens tokens; a request of C cached tokens needs
// ceil(C / block) blocks. The reserve is what vLLM's start-up profile measures: a forward pass of
// max_num_batched_tokens tokens, modelled from the model's shape by non_kv_reserve_bytes().
// Quantised weights keep the token embeddings and the LM head in 16 bit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "analysis/model_spec.h"

namespace llmcap::analysis {

inline constexpr double kBytesPerGB = 1e9;            // 1 GB = 10^9 bytes
inline constexpr double kBytesPerGiB = 1073741824.0;  // 1 GiB = 2^30 bytes

// The physical parameters of the non-KV reserve, fitted once to published vLLM start-up logs
// (tests/unit/analysis/memory_fit_test.cc lists every point and its source; sim/README.md
// "Memory fit"). Not per-model constants.
// Memory outside PyTorch's tensors that vLLM counts at start-up: cuBLAS/cuDNN workspaces,
// allocator slack, torch.compile buffers (vLLM ≥ 0.6.4 measures it from a baseline taken after
// the CUDA context exists, so the context itself falls in the 1 − utilisation headroom).
inline constexpr double kNonTorchReserveBytes = 0.25 * kBytesPerGiB;
// Live 16-bit values per token at the forward pass's peak, in the MLP: the gate/up projection
// (2 × ffn) and its activated product (ffn) side by side, plus this many hidden-sized buffers
// (residual, layer input, normalised input, block output).
inline constexpr double kPeakFfnWidths = 3.0;
inline constexpr double kPeakHiddenWidths = 4.0;
// fp32 copies of the sampled rows' logits alive at once in the sampler (logits, probabilities).
inline constexpr double kSamplerLogitCopies = 2.0;

struct MemoryFitInput {
  Dtype dtype = Dtype::kBf16;           // weight precision
  double kv_bytes_per_element = 2.0;    // 2 for a bf16/fp16 KV cache, 1 for fp8
  std::int64_t context_tokens = 8192;   // cached tokens per request (input + output)
  std::int64_t concurrency = 1;         // requests resident at once
  double gpu_memory_utilization = 0.9;  // fraction of memory the engine may use (vLLM default)
  // Tokens of the forward pass vLLM profiles at start-up (its max_num_batched_tokens: 2048 with
  // chunked prefill; max(max_model_len, 2048) in vLLM V0 without it).
  std::int64_t max_num_batched_tokens = 2048;
  std::int64_t max_num_seqs = 256;  // sequences whose logits the profile samples (at most tokens)
  // Reserved outside the KV pool; < 0 means model.activation_reserve_bytes when that is set,
  // else non_kv_reserve_bytes().
  double activation_reserve_bytes = -1;
  std::int64_t block_tokens = 16;  // paged-attention block size
  // GPUs the model is split over by tensor parallelism (vLLM --tensor-parallel-size). Each GPU
  // holds 1/N of every weight matrix (embedding and LM head split by vocabulary too) and the KV
  // of its attention heads for every token: max(1, kv_heads / N) KV heads (replicated when N
  // exceeds the model's KV heads, as vLLM does). tensor_parallel_problem() says which N a model
  // takes.
  int tensor_parallel = 1;
};

// With tensor_parallel N > 1 every byte figure is per GPU (vLLM sizes the KV cache on each GPU
// alike); token counts, blocks and concurrency are the engine's.
struct MemoryFit {
  int tensor_parallel = 1;
  double total_weight_bytes = 0;  // all N shards together
  double memory_bytes = 0;        // hardware memory as CUDA reports it (what vLLM budgets from)
  double nominal_memory_gb = 0;   // the card's datasheet figure ("80" GB); 0 when unknown
  double budget_bytes = 0;        // utilisation × memory
  double weight_bytes = 0;
  double activation_reserve_bytes = 0;
  double kv_bytes_per_token = 0;
  double kv_bytes_per_request = 0;  // context_tokens rounded up to whole blocks
  double kv_pool_bytes = 0;         // vLLM's "Available KV cache memory"; 0 when none is left
  double shortfall_bytes = 0;       // weights + reserve beyond the budget; 0 when they fit
  std::int64_t kv_pool_blocks = 0;  // whole blocks in the pool (0 when negative)
  std::int64_t kv_pool_tokens = 0;  // kv_pool_blocks × block_tokens
  std::int64_t blocks_per_request = 0;
  std::int64_t max_concurrent_sequences = 0;  // at context_tokens each
  // vLLM's "# GPU blocks: N" and "Maximum concurrency for T tokens per request: 27.42x"
  // (kv_pool_tokens / context_tokens).
  std::int64_t gpu_blocks = 0;
  double max_concurrency_at_context = 0;
  bool weights_fit = false;        // weights + reserve within the budget
  bool one_sequence_fits = false;  // one context_tokens request fits in the pool
  bool fits = false;               // `concurrency` such requests fit at once
  std::string explanation;         // one line with the numbers, for errors and reports
};

MemoryFit estimate_memory_fit(const ModelSpec& model, const HardwareSpec& hardware,
                              const MemoryFitInput& input);

// Weight memory as loaded: the token embedding and the LM head (one matrix when tied) stay in
// 16 bit, every other parameter takes bytes_per_param(dtype).
double loaded_weight_bytes(const ModelSpec& model, Dtype dtype);

// The non-KV reserve of a vLLM-style engine for this model (GPU-independent):
//   non-torch + max(activation peak, sampler peak)
//   activation peak = tokens × 2 B × (3 × ffn + 4 × hidden)
// (for MoE, ffn is active_ffn(): each token's top-k experts' widths plus the shared experts')
//   sampler peak    = min(tokens, seqs) × vocab × 4 B × 2
// CUDA graphs are captured after the KV cache is sized (vLLM ≤ 0.11 logs "Graph capturing
// finished ... took 0.03–0.2 GiB"), so they come out of the 1 − utilisation headroom.
// With tensor parallelism N each GPU holds ffn / N of the MLP's activations (column-parallel
// gate/up projections) but full hidden-sized buffers (after each all-reduce) and, on the
// driver GPU, the gathered full-vocabulary logits: the default N = 1 is the single-GPU figure.
double non_kv_reserve_bytes(const ModelSpec& model, std::int64_t max_num_batched_tokens,
                            std::int64_t max_num_seqs, int tensor_parallel = 1);

// Why a model cannot be split over N GPUs by tensor parallelism (vLLM's checks: N ≥ 1, the
// attention heads divide by N, and the KV heads divide by N or N by the KV heads), or nothing.
std::optional<std::string> tensor_parallel_problem(const ModelSpec& model, int tensor_parallel);

// KV heads each GPU holds under tensor parallelism N: kv_heads / N, at least 1 (replicated).
std::int64_t kv_heads_per_gpu(const ModelSpec& model, int tensor_parallel);

inline double to_gb(double bytes) { return bytes / kBytesPerGB; }
inline double to_gib(double bytes) { return bytes / kBytesPerGiB; }

}  // namespace llmcap::analysis
