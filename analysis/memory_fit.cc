#include "analysis/memory_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace llmcap::analysis {

namespace {

std::string gb_gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GB (%.2f GiB)", to_gb(bytes), to_gib(bytes));
  return buf;
}

}  // namespace

MemoryFit estimate_memory_fit(const ModelSpec& model, const HardwareSpec& hardware,
                              const MemoryFitInput& input) {
  MemoryFit fit;
  const std::int64_t block = input.block_tokens > 0 ? input.block_tokens : 16;
  fit.memory_bytes = hardware.memory_bytes;
  fit.budget_bytes = input.gpu_memory_utilization * hardware.memory_bytes;
  fit.weight_bytes = weight_bytes(model, input.dtype);
  fit.activation_reserve_bytes = input.activation_reserve_bytes >= 0
                                     ? input.activation_reserve_bytes
                                     : model.activation_reserve_bytes;
  fit.kv_bytes_per_token = kv_bytes_per_token(model, input.kv_bytes_per_element);
  const std::int64_t context = input.context_tokens > 0 ? input.context_tokens : 0;
  fit.blocks_per_request = (context + block - 1) / block;
  fit.kv_bytes_per_request =
      static_cast<double>(fit.blocks_per_request * block) * fit.kv_bytes_per_token;
  const double left = fit.budget_bytes - fit.weight_bytes - fit.activation_reserve_bytes;
  fit.weights_fit = left > 0;
  fit.kv_pool_bytes = std::max(0.0, left);
  fit.shortfall_bytes = std::max(0.0, -left);
  if (fit.weights_fit && fit.kv_bytes_per_token > 0) {
    fit.kv_pool_blocks = static_cast<std::int64_t>(
        std::floor(fit.kv_pool_bytes / (fit.kv_bytes_per_token * static_cast<double>(block))));
  }
  fit.kv_pool_tokens = fit.kv_pool_blocks * block;
  fit.max_concurrent_sequences =
      fit.blocks_per_request > 0 ? fit.kv_pool_blocks / fit.blocks_per_request : 0;
  fit.one_sequence_fits = fit.weights_fit && fit.max_concurrent_sequences >= 1;
  fit.fits = fit.one_sequence_fits && fit.max_concurrent_sequences >= input.concurrency;

  char share[32];
  std::snprintf(share, sizeof share, "%.0f%%", input.gpu_memory_utilization * 100);
  std::string text = model.name + " " + std::string(to_string(input.dtype)) + " on " +
                     hardware.name + ": budget " + gb_gib(fit.budget_bytes) + " (" + share +
                     " of " + gb_gib(fit.memory_bytes) + "), weights " + gb_gib(fit.weight_bytes) +
                     ", activation reserve " + gb_gib(fit.activation_reserve_bytes);
  if (!fit.weights_fit) {
    text += ": the weights and reserve do not fit, " + gb_gib(fit.shortfall_bytes) +
            " short, no KV pool left";
  } else {
    text += ", KV pool " + gb_gib(fit.kv_pool_bytes);
    text += " = " + std::to_string(fit.kv_pool_tokens) + " tokens at " +
            std::to_string(static_cast<std::int64_t>(fit.kv_bytes_per_token)) +
            " bytes/token; one " + std::to_string(context) + "-token request needs " +
            gb_gib(fit.kv_bytes_per_request) + "; " + std::to_string(fit.max_concurrent_sequences) +
            " such requests fit";
    if (!fit.one_sequence_fits)
      text += ": one full-length sequence does not fit";
    else if (!fit.fits)
      text += ", fewer than the " + std::to_string(input.concurrency) + " asked";
  }
  fit.explanation = std::move(text);
  return fit;
}

}  // namespace llmcap::analysis
