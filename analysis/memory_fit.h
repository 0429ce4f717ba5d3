// MemoryFit: how a model fits on a GPU under a vLLM-style memory budget (docs/metrics.md §7).
// Shared by the simulator (sim/, to size its KV pool and refuse to start) and the API (a fit
// estimate endpoint). Pure arithmetic, no I/O. Thread safety: free functions over values.
//
// Budget: KV pool = utilisation × memory − weights − activation reserve; the pool is cut into
// paged blocks of block_tokens tokens; a request of C cached tokens needs ceil(C / block) blocks.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/model_spec.h"

namespace llmcap::analysis {

inline constexpr double kBytesPerGB = 1e9;            // 1 GB = 10^9 bytes
inline constexpr double kBytesPerGiB = 1073741824.0;  // 1 GiB = 2^30 bytes

struct MemoryFitInput {
  Dtype dtype = Dtype::kBf16;           // weight precision
  double kv_bytes_per_element = 2.0;    // 2 for a bf16/fp16 KV cache, 1 for fp8
  std::int64_t context_tokens = 8192;   // cached tokens per request (input + output)
  std::int64_t concurrency = 1;         // requests resident at once
  double gpu_memory_utilization = 0.9;  // fraction of memory the engine may use (vLLM default)
  // Reserved outside the KV pool; < 0 means use model.activation_reserve_bytes.
  double activation_reserve_bytes = -1;
  std::int64_t block_tokens = 16;  // paged-attention block size
};

struct MemoryFit {
  double memory_bytes = 0;  // hardware memory
  double budget_bytes = 0;  // utilisation × memory
  double weight_bytes = 0;
  double activation_reserve_bytes = 0;
  double kv_bytes_per_token = 0;
  double kv_bytes_per_request = 0;  // context_tokens rounded up to whole blocks
  double kv_pool_bytes = 0;         // 0 when the weights and reserve do not fit
  double shortfall_bytes = 0;       // weights + reserve beyond the budget; 0 when they fit
  std::int64_t kv_pool_blocks = 0;  // whole blocks in the pool (0 when negative)
  std::int64_t kv_pool_tokens = 0;  // kv_pool_blocks × block_tokens
  std::int64_t blocks_per_request = 0;
  std::int64_t max_concurrent_sequences = 0;  // at context_tokens each
  bool weights_fit = false;                   // weights + reserve within the budget
  bool one_sequence_fits = false;             // one context_tokens request fits in the pool
  bool fits = false;                          // `concurrency` such requests fit at once
  std::string explanation;                    // one line with the numbers, for errors and reports
};

MemoryFit estimate_memory_fit(const ModelSpec& model, const HardwareSpec& hardware,
                              const MemoryFitInput& input);

inline double to_gb(double bytes) { return bytes / kBytesPerGB; }
inline double to_gib(double bytes) { return bytes / kBytesPerGiB; }

}  // namespace llmcap::analysis
